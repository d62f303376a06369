// Server on a real libuv loop, over a unix socket in a temp dir and TCP on 127.0.0.1. The client
// is a uv::Stream on the same loop, so every test is single-threaded; waits are RunUntil(), a
// poll of the loop bounded by a deadline timer, never a sleep. Each test ends with the loop
// closing cleanly, which catches leaked handles.

#include "agent/http/server.h"

#include <llhttp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"
#include "agent/uv/loop.h"
#include "agent/uv/stream.h"
#include "agent/uv/timer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/run_loop_until.h"

namespace hawk::http {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A response as the client saw it.
struct Parsed {
  int status = 0;
  std::map<std::string, std::string> headers;  // lowercase names
  std::string body;
  int chunks = 0;
};

// Parses every complete response in `bytes` (llhttp, response mode).
std::vector<Parsed> ParseResponses(absl::string_view bytes) {
  struct State {
    std::vector<Parsed> done;
    Parsed current;
    std::string field, value;
  } state;
  llhttp_settings_t settings;
  llhttp_settings_init(&settings);
  settings.on_message_begin = [](llhttp_t* p) {
    static_cast<State*>(p->data)->current = Parsed();
    return 0;
  };
  settings.on_header_field = [](llhttp_t* p, const char* at, size_t n) {
    static_cast<State*>(p->data)->field.append(at, n);
    return 0;
  };
  settings.on_header_value = [](llhttp_t* p, const char* at, size_t n) {
    static_cast<State*>(p->data)->value.append(at, n);
    return 0;
  };
  settings.on_header_value_complete = [](llhttp_t* p) {
    auto* s = static_cast<State*>(p->data);
    s->current.headers[absl::AsciiStrToLower(s->field)] = s->value;
    s->field.clear();
    s->value.clear();
    return 0;
  };
  settings.on_body = [](llhttp_t* p, const char* at, size_t n) {
    static_cast<State*>(p->data)->current.body.append(at, n);
    return 0;
  };
  settings.on_chunk_header = [](llhttp_t* p) {
    if (p->content_length > 0) ++static_cast<State*>(p->data)->current.chunks;
    return 0;
  };
  settings.on_message_complete = [](llhttp_t* p) {
    auto* s = static_cast<State*>(p->data);
    s->current.status = llhttp_get_status_code(p);
    s->done.push_back(s->current);
    return 0;
  };
  llhttp_t parser;
  llhttp_init(&parser, HTTP_RESPONSE, &settings);
  parser.data = &state;
  llhttp_execute(&parser, bytes.data(), bytes.size());
  return state.done;
}

// A client connection on the test's loop.
class Client {
 public:
  Client(uv_loop_t* loop, const base::Address& address, bool read = true)
      : stream_(std::make_unique<uv::Stream>(loop, address.kind)) {
    absl::Status status = stream_->Connect(address, [this, read](absl::Status connected) {
      connect_status_ = connected;
      connected_ = true;
      if (connected.ok() && read) StartReading();
    });
    EXPECT_TRUE(status.ok()) << status;
  }

  void StartReading() {
    EXPECT_TRUE(
        stream_
            ->StartReading(
                [this](absl::string_view bytes) { received_.append(bytes.data(), bytes.size()); },
                [this](absl::Status end) {
                  ended_ = true;
                  end_status_ = end;
                })
            .ok());
  }

  void Write(std::string bytes) { EXPECT_TRUE(stream_->Write(std::move(bytes)).ok()); }
  void Close() { stream_.reset(); }

  bool connected() const { return connected_; }
  const absl::Status& connect_status() const { return connect_status_; }
  bool ended() const { return ended_; }
  const std::string& received() const { return received_; }
  std::vector<Parsed> responses() const { return ParseResponses(received_); }

 private:
  std::unique_ptr<uv::Stream> stream_;
  bool connected_ = false;
  absl::Status connect_status_;
  bool ended_ = false;
  absl::Status end_status_;
  std::string received_;
};

Response Text(std::string body) {
  Response r;
  r.content_type = "text/plain";
  r.body = std::move(body);
  return r;
}

std::string Get(absl::string_view target, absl::string_view extra_headers = "") {
  return absl::StrCat("GET ", target, " HTTP/1.1\r\nHost: hawk\r\n", extra_headers, "\r\n");
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hawk-http-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }

  void TearDown() override {
    clients_.clear();
    server_.reset();
    EXPECT_TRUE(loop_.RunDryAndClose().ok());
    rmdir(dir_.c_str());
  }

  base::Address UnixAddress() {
    return base::Address{base::Address::Kind::kUnix, dir_ + "/api.sock", "", 0};
  }
  static base::Address TcpAddress() {
    return base::Address{base::Address::Kind::kTcp, "", "127.0.0.1", 0};
  }

  void StartServer(Handler handler, ServerOptions options = {},
                   absl::optional<base::Address> address = absl::nullopt) {
    auto server = Server::Create(loop_.get(), address ? *address : UnixAddress(),
                                 std::move(options), std::move(handler));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  bool RunUntil(const std::function<bool()>& done, uint64_t timeout_ms = 5000) {
    return hawk::testing::RunLoopUntil(loop_.get(), done, timeout_ms);
  }

  Client* Connect(bool read = true) {
    clients_.push_back(std::make_unique<Client>(loop_.get(), server_->address(), read));
    Client* client = clients_.back().get();
    EXPECT_TRUE(RunUntil([&] { return client->connected(); }));
    EXPECT_TRUE(client->connect_status().ok()) << client->connect_status();
    return client;
  }

  bool WaitResponses(Client* client, size_t n) {
    return RunUntil([&] { return client->responses().size() >= n || client->ended(); }) &&
           client->responses().size() >= n;
  }

  uv::Loop loop_;
  std::string dir_;
  std::unique_ptr<Server> server_;
  std::vector<std::unique_ptr<Client>> clients_;
};

Handler EchoPath() {
  return [](const Request& request, Responder responder) {
    responder.Send(Text(absl::StrCat(request.method, " ", request.path)));
  };
}

TEST_F(ServerTest, GetOverUnixSocketWhoseFileIsPrivate) {
  StartServer(EchoPath());
  struct stat st {};
  ASSERT_EQ(stat(UnixAddress().path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  Client* client = Connect();
  client->Write(Get("/healthz"));
  ASSERT_TRUE(WaitResponses(client, 1));
  Parsed r = client->responses()[0];
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "GET /healthz");
  EXPECT_EQ(r.headers["content-type"], "text/plain");
  EXPECT_EQ(r.headers["content-length"], "12");
  EXPECT_EQ(r.headers.count("connection"), 0u);
  EXPECT_FALSE(client->ended());
}

TEST_F(ServerTest, GetOverTcpOnAFreePort) {
  StartServer(EchoPath(), {}, TcpAddress());
  EXPECT_NE(server_->address().port, 0);
  Client* client = Connect();
  client->Write(Get("/v1/workers?x=1"));
  ASSERT_TRUE(WaitResponses(client, 1));
  EXPECT_EQ(client->responses()[0].body, "GET /v1/workers");
}

TEST_F(ServerTest, KeepAliveReusesOneConnection) {
  int handled = 0;
  StartServer([&](const Request& request, Responder responder) {
    ++handled;
    responder.Send(Text(absl::StrCat(handled, " ", request.path)));
  });
  Client* client = Connect();
  for (int i = 1; i <= 3; ++i) {
    client->Write(Get(absl::StrCat("/r", i)));
    ASSERT_TRUE(WaitResponses(client, i));
    EXPECT_EQ(server_->connection_count(), 1u);
  }
  std::vector<std::string> bodies;
  for (const Parsed& r : client->responses()) bodies.push_back(r.body);
  EXPECT_THAT(bodies, ElementsAre("1 /r1", "2 /r2", "3 /r3"));
  EXPECT_FALSE(client->ended());
}

TEST_F(ServerTest, PipelinedRequestsAreAnsweredInOrderOneAtATime) {
  // /slow is answered from a timer; the requests behind it must wait for it.
  std::unique_ptr<uv::Timer> timer;
  int in_flight = 0;
  int max_in_flight = 0;
  std::vector<std::string> handled;
  StartServer([&](const Request& request, Responder responder) {
    handled.push_back(request.path);
    max_in_flight = std::max(max_in_flight, ++in_flight);
    if (request.path == "/slow") {
      timer = std::make_unique<uv::Timer>(loop_.get());
      timer->Start(absl::Milliseconds(20), [&in_flight, responder]() mutable {
        --in_flight;
        responder.Send(Text("slow"));
      });
      return;
    }
    --in_flight;
    responder.Send(Text(request.path));
  });
  Client* client = Connect();
  client->Write(Get("/slow") + Get("/b") + Get("/c", "Connection: close\r\n"));
  ASSERT_TRUE(RunUntil([&] { return client->ended(); }));
  std::vector<std::string> bodies;
  for (const Parsed& r : client->responses()) bodies.push_back(r.body);
  EXPECT_THAT(bodies, ElementsAre("slow", "/b", "/c"));
  EXPECT_THAT(handled, ElementsAre("/slow", "/b", "/c"));
  EXPECT_EQ(max_in_flight, 1);
  EXPECT_EQ(client->responses()[2].headers["connection"], "close");
}

TEST_F(ServerTest, AsyncResponseFromATimer) {
  std::unique_ptr<uv::Timer> timer;
  StartServer([&](const Request&, Responder responder) {
    timer = std::make_unique<uv::Timer>(loop_.get());
    timer->Start(absl::Milliseconds(10), [responder]() mutable {
      EXPECT_TRUE(responder.alive());
      responder.Send(Text("later"));
      EXPECT_FALSE(responder.alive());
      responder.Send(Text("twice"));  // ignored: already answered
    });
  });
  Client* client = Connect();
  client->Write(Get("/") + Get("/"));
  ASSERT_TRUE(WaitResponses(client, 2));
  EXPECT_EQ(client->responses()[0].body, "later");
  EXPECT_EQ(client->responses()[1].body, "later");
  EXPECT_EQ(client->responses().size(), 2u);
}

TEST_F(ServerTest, MalformedRequestGets400AndTheConnectionCloses) {
  StartServer(EchoPath());
  Client* client = Connect();
  client->Write(Get("/ok") + "GARBAGE\r\n\r\nmore garbage that is never read");
  ASSERT_TRUE(RunUntil([&] { return client->ended(); }));
  std::vector<Parsed> responses = client->responses();
  ASSERT_EQ(responses.size(), 2u);
  EXPECT_EQ(responses[0].body, "GET /ok");  // the good request before it is answered first
  EXPECT_EQ(responses[1].status, 400);
  EXPECT_EQ(responses[1].headers["content-type"], "application/json");
  EXPECT_EQ(responses[1].headers["connection"], "close");
  EXPECT_THAT(responses[1].body, HasSubstr(R"({"error":{"code":"INVALID_ARGUMENT","message":)"));
}

struct LimitCase {
  std::string name;
  std::string request;
  int status;
};

TEST_F(ServerTest, LimitsGet414And431And413) {
  ServerOptions options;
  options.parser.max_request_line_bytes = 256;
  options.parser.max_header_bytes = 1024;
  options.parser.max_body_bytes = 100;
  StartServer(EchoPath(), options);
  std::vector<LimitCase> cases = {
      {"RequestLine", Get("/" + std::string(300, 'a')), 414},
      {"HeaderBytes", Get("/", "X-Big: " + std::string(2000, 'b') + "\r\n"), 431},
      {"Body", "POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 413},
  };
  for (const LimitCase& c : cases) {
    SCOPED_TRACE(c.name);
    Client* client = Connect();
    client->Write(c.request);
    ASSERT_TRUE(RunUntil([&] { return client->ended(); }));
    std::vector<Parsed> responses = client->responses();
    ASSERT_EQ(responses.size(), 1u);
    EXPECT_EQ(responses[0].status, c.status);
    EXPECT_EQ(responses[0].headers["connection"], "close");
    EXPECT_THAT(responses[0].body, HasSubstr("RESOURCE_EXHAUSTED"));
  }
}

TEST_F(ServerTest, HeaderTimeoutGets408AndCloses) {
  ServerOptions options;
  options.header_timeout = absl::Milliseconds(100);
  StartServer(EchoPath(), options);
  Client* client = Connect();
  uint64_t start = loop_.NowMs();
  client->Write("GET / HTTP/1.1\r\nHost: ha");
  ASSERT_TRUE(RunUntil([&] { return client->ended(); }));
  EXPECT_GE(loop_.NowMs() - start, 90u);
  std::vector<Parsed> responses = client->responses();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].status, 408);
  EXPECT_THAT(responses[0].body, HasSubstr("DEADLINE_EXCEEDED"));
  // The server lingers until the client closes its side, then lets go at once.
  EXPECT_EQ(server_->connection_count(), 1u);
  client->Close();
  uint64_t closed_at = loop_.NowMs();
  ASSERT_TRUE(RunUntil([&] { return server_->connection_count() == 0; }));
  EXPECT_LT(loop_.NowMs() - closed_at, 1000u);
}

TEST_F(ServerTest, LingeringIsBoundedForAClientThatNeverCloses) {
  ServerOptions options;
  options.linger_timeout = absl::Milliseconds(50);
  StartServer(EchoPath(), options);
  Client* client = Connect();
  client->Write(Get("/", "Connection: close\r\n"));
  ASSERT_TRUE(RunUntil([&] { return client->ended(); }));
  ASSERT_TRUE(RunUntil([&] { return server_->connection_count() == 0; }));
  EXPECT_EQ(client->responses().size(), 1u);
}

TEST_F(ServerTest, LingeringStartsOnceTheLastResponseIsOut) {
  // A closing connection whose big response the client reads late: the linger bound must not
  // cut the response short (a 5 MB GET /v1/state once was, to a client busy elsewhere).
  ServerOptions options;
  options.linger_timeout = absl::Milliseconds(50);
  std::string big(4 * 1024 * 1024, 'b');  // more than the socket buffers take
  StartServer([&](const Request&, Responder responder) { responder.Send(Text(big)); }, options);
  Client* client = Connect(/*read=*/false);
  client->Write(Get("/", "Connection: close\r\n"));
  // The client reads nothing for several linger bounds (a bounded poll of the loop).
  RunUntil([] { return false; }, 300);
  client->StartReading();
  ASSERT_TRUE(RunUntil([&] { return client->ended(); }, 10000));
  ASSERT_EQ(client->responses().size(), 1u);
  EXPECT_EQ(client->responses()[0].body.size(), big.size());
  ASSERT_TRUE(RunUntil([&] { return server_->connection_count() == 0; }));
}

TEST_F(ServerTest, AClosingConnectionWhoseClientNeverReadsIsDropped) {
  ServerOptions options;
  options.linger_timeout = absl::Milliseconds(50);
  options.idle_timeout = absl::Milliseconds(200);
  std::string big(4 * 1024 * 1024, 'b');
  StartServer([&](const Request&, Responder responder) { responder.Send(Text(big)); }, options);
  Connect(/*read=*/false)->Write(Get("/", "Connection: close\r\n"));
  ASSERT_TRUE(RunUntil([&] { return server_->connection_count() == 1; }));
  ASSERT_TRUE(RunUntil([&] { return server_->connection_count() == 0; }, 5000));
}

TEST_F(ServerTest, HeaderTimeoutCountsFromTheFirstByteNotFromEachByte) {
  ServerOptions options;
  options.header_timeout = absl::Milliseconds(150);
  StartServer(EchoPath(), options);
  Client* client = Connect();
  // A trickle of header bytes every 20 ms does not extend the deadline.
  uv::Timer trickle(loop_.get());
  uint64_t start = loop_.NowMs();
  client->Write("GET / HTTP/1.1\r\n");
  trickle.StartRepeating(absl::Milliseconds(20), absl::Milliseconds(20),
                         [&] { client->Write("X: y\r\n"); });
  ASSERT_TRUE(RunUntil([&] { return client->ended(); }));
  trickle.Stop();
  EXPECT_LT(loop_.NowMs() - start, 1000u);
  ASSERT_EQ(client->responses().size(), 1u);
  EXPECT_EQ(client->responses()[0].status, 408);
}

TEST_F(ServerTest, IdleTimeoutClosesWithoutAResponse) {
  ServerOptions options;
  options.idle_timeout = absl::Milliseconds(100);
  StartServer(EchoPath(), options);
  Client* served = Connect();
  served->Write(Get("/"));
  ASSERT_TRUE(WaitResponses(served, 1));
  Client* silent = Connect();
  uint64_t start = loop_.NowMs();
  ASSERT_TRUE(RunUntil([&] { return served->ended() && silent->ended(); }));
  EXPECT_GE(loop_.NowMs() - start, 90u);
  EXPECT_EQ(served->responses().size(), 1u);
  EXPECT_EQ(silent->received(), "");
}

TEST_F(ServerTest, StreamingChunksThenTheConnectionIsReused) {
  std::unique_ptr<uv::Timer> timer;
  int chunks_sent = 0;
  StartServer([&](const Request& request, Responder responder) {
    if (request.path != "/watch") {
      responder.Send(Text("after"));
      return;
    }
    ASSERT_TRUE(responder.StartStream(200, "application/x-ndjson"));
    EXPECT_FALSE(responder.StartStream(200, "x"));  // once only
    timer = std::make_unique<uv::Timer>(loop_.get());
    timer->StartRepeating(
        absl::Milliseconds(1), absl::Milliseconds(5), [&chunks_sent, &timer, responder]() mutable {
          EXPECT_TRUE(responder.WriteChunk(absl::StrCat(R"({"n":)", ++chunks_sent, "}\n")));
          if (chunks_sent == 3) {
            responder.EndStream();
            EXPECT_FALSE(responder.WriteChunk("late"));
            timer->Stop();
          }
        });
  });
  Client* client = Connect();
  client->Write(Get("/watch") + Get("/next"));
  ASSERT_TRUE(WaitResponses(client, 2));
  std::vector<Parsed> responses = client->responses();
  EXPECT_EQ(responses[0].headers["transfer-encoding"], "chunked");
  EXPECT_EQ(responses[0].headers["content-type"], "application/x-ndjson");
  EXPECT_EQ(responses[0].body, "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n");
  EXPECT_EQ(responses[0].chunks, 3);
  EXPECT_EQ(responses[1].body, "after");
  EXPECT_FALSE(client->ended());
}

TEST_F(ServerTest, SlowStreamReaderIsDropped) {
  ServerOptions options;
  options.max_stream_buffer_bytes = 64 * 1024;
  bool closed = false;
  bool refused = false;
  size_t written = 0;
  Responder kept;
  StartServer(
      [&](const Request&, Responder responder) {
        kept = responder;
        responder.OnClosed([&] { closed = true; });
        ASSERT_TRUE(responder.StartStream(200, "application/x-ndjson"));
        std::string chunk(16 * 1024, 'x');
        // The client never reads: the socket buffers fill, then the stream buffer.
        for (int i = 0; i < 10000; ++i) {
          if (!responder.WriteChunk(chunk)) {
            refused = true;
            break;
          }
          written += chunk.size();
          EXPECT_LE(responder.buffered_bytes(), options.max_stream_buffer_bytes);
        }
        EXPECT_FALSE(closed);  // OnClosed runs from the loop, not inside WriteChunk()
      },
      options);
  Client* client = Connect(/*read=*/false);
  client->Write(Get("/watch"));
  ASSERT_TRUE(RunUntil([&] { return closed; }));
  EXPECT_TRUE(refused);
  EXPECT_LT(written, 10000u * 16 * 1024);
  EXPECT_FALSE(kept.alive());
  EXPECT_EQ(kept.buffered_bytes(), 0u);
  EXPECT_FALSE(kept.WriteChunk("more"));
  RunUntil([&] { return server_->connection_count() == 0; });
  EXPECT_EQ(server_->connection_count(), 0u);
}

TEST_F(ServerTest, AClientThatDoesNotReadHoldsBackItsNextRequest) {
  ServerOptions options;
  options.max_stream_buffer_bytes = 64 * 1024;
  int handled = 0;
  std::string big(4 * 1024 * 1024, 'b');  // more than the socket buffers take
  StartServer(
      [&](const Request&, Responder responder) {
        ++handled;
        responder.Send(Text(big));
      },
      options);
  Client* client = Connect(/*read=*/false);
  client->Write(Get("/1") + Get("/2"));
  ASSERT_TRUE(RunUntil([&] { return handled == 1; }));
  // The first response is stuck in the server's buffer: /2 waits rather than piling up more.
  // A short poll of the loop (bounded, not a sleep) shows it stays waiting.
  RunUntil([] { return false; }, 50);
  EXPECT_EQ(handled, 1);
  client->StartReading();
  ASSERT_TRUE(RunUntil([&] { return client->responses().size() == 2; }, 10000));
  EXPECT_EQ(handled, 2);
  EXPECT_EQ(client->responses()[1].body.size(), big.size());
}

TEST_F(ServerTest, DroppingTheResponderOfAStreamEndsIt) {
  StartServer([](const Request& request, Responder responder) {
    if (request.path == "/watch") {
      responder.StartStream(200, "application/x-ndjson");
      responder.WriteChunk("{}\n");
      return;  // the last Responder copy goes away here
    }
    responder.Send(Text("next"));
  });
  Client* client = Connect();
  client->Write(Get("/watch") + Get("/next"));
  ASSERT_TRUE(WaitResponses(client, 2));
  EXPECT_EQ(client->responses()[0].body, "{}\n");
  EXPECT_EQ(client->responses()[1].body, "next");
}

TEST_F(ServerTest, ResponderAfterTheConnectionClosedIsHarmless) {
  Responder kept;
  int closed = 0;
  StartServer([&](const Request&, Responder responder) {
    kept = responder;
    kept.OnClosed([&] { ++closed; });
  });
  Client* client = Connect();
  client->Write(Get("/pending"));
  ASSERT_TRUE(RunUntil([&] { return kept.alive(); }));
  client->Close();
  ASSERT_TRUE(RunUntil([&] { return closed == 1; }));
  EXPECT_FALSE(kept.alive());
  kept.Send(Text("nobody listens"));
  EXPECT_FALSE(kept.StartStream(200, "text/plain"));
  EXPECT_FALSE(kept.WriteChunk("x"));
  kept.EndStream();
  EXPECT_EQ(kept.buffered_bytes(), 0u);
  int late = 0;
  kept.OnClosed([&] { ++late; });  // already gone: runs at once
  EXPECT_EQ(late, 1);
  RunUntil([&] { return server_->connection_count() == 0; });
  server_.reset();
  kept.Send(Text("server gone too"));
  EXPECT_FALSE(kept.alive());
  EXPECT_EQ(closed, 1);

  Responder detached;  // a default Responder answers nothing
  detached.Send(Text("x"));
  EXPECT_FALSE(detached.alive());
}

TEST_F(ServerTest, DroppedResponderGets500) {
  StartServer([](const Request&, Responder) {});
  Client* client = Connect();
  client->Write(Get("/forgotten") + Get("/next"));
  ASSERT_TRUE(WaitResponses(client, 2));
  for (const Parsed& r : client->responses()) {
    EXPECT_EQ(r.status, 500);
    EXPECT_THAT(r.body, HasSubstr("INTERNAL"));
  }
}

TEST_F(ServerTest, MaxConnectionsRefusesWith503) {
  ServerOptions options;
  options.max_connections = 1;
  StartServer(EchoPath(), options);
  Client* first = Connect();
  ASSERT_TRUE(RunUntil([&] { return server_->connection_count() == 1; }));
  Client* second = Connect();
  second->Write(Get("/"));
  ASSERT_TRUE(RunUntil([&] { return second->ended(); }));
  ASSERT_EQ(second->responses().size(), 1u);
  EXPECT_EQ(second->responses()[0].status, 503);
  EXPECT_THAT(second->responses()[0].body, HasSubstr("UNAVAILABLE"));
  first->Write(Get("/still-served"));
  ASSERT_TRUE(WaitResponses(first, 1));
  EXPECT_EQ(first->responses()[0].status, 200);
}

TEST_F(ServerTest, ConnectionCloseRequestClosesAfterTheResponse) {
  StartServer(EchoPath());
  Client* client = Connect();
  client->Write(Get("/", "Connection: close\r\n"));
  ASSERT_TRUE(RunUntil([&] { return client->ended(); }));
  ASSERT_EQ(client->responses().size(), 1u);
  EXPECT_EQ(client->responses()[0].headers["connection"], "close");
}

TEST_F(ServerTest, Http10KeepAliveIsAnnounced) {
  StartServer(EchoPath());
  Client* client = Connect();
  client->Write("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  ASSERT_TRUE(WaitResponses(client, 1));
  EXPECT_EQ(client->responses()[0].headers["connection"], "keep-alive");
  client->Write("GET /b HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(RunUntil([&] { return client->ended(); }));
  ASSERT_EQ(client->responses().size(), 2u);
  EXPECT_EQ(client->responses()[1].headers["connection"], "close");
}

TEST_F(ServerTest, HeadGetsHeadersOnly) {
  StartServer(EchoPath());
  Client* client = Connect();
  client->Write("HEAD /x HTTP/1.1\r\n\r\n" + Get("/y"));
  std::string expected_head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 7\r\n\r\n";
  std::string expected = expected_head +
                         "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                         "6\r\n\r\nGET /y";
  ASSERT_TRUE(RunUntil([&] { return client->received().size() >= expected.size(); }));
  EXPECT_EQ(client->received(), expected);
}

// A HEAD request to a streaming endpoint gets the stream's head and is then complete: the
// handler is told not to stream, and a keep-alive client's next request is served.
TEST_F(ServerTest, HeadOfAStreamCompletesAndTheNextRequestIsServed) {
  std::vector<Responder> kept;  // a handler that streams keeps its responder and never ends
  bool streaming_started = false;
  StartServer([&](const Request& request, Responder responder) {
    if (request.path != "/watch") {
      responder.Send(Text("after"));
      return;
    }
    if (responder.StartStream(200, "application/x-ndjson")) {
      streaming_started = true;
      kept.push_back(responder);
    }
  });
  Client* client = Connect();
  client->Write("HEAD /watch HTTP/1.1\r\n\r\n" + Get("/next"));
  ASSERT_TRUE(RunUntil([&] { return absl::StrContains(client->received(), "after"); }))
      << client->received();
  EXPECT_FALSE(streaming_started);
  EXPECT_TRUE(absl::StartsWith(client->received(), "HTTP/1.1 200 OK\r\n"));
  EXPECT_TRUE(absl::StrContains(client->received(), "Content-Type: application/x-ndjson\r\n"));
  EXPECT_FALSE(client->ended());
}

TEST_F(ServerTest, ExpectContinueGets100BeforeTheBody) {
  StartServer(
      [](const Request& request, Responder responder) { responder.Send(Text(request.body)); });
  Client* client = Connect();
  client->Write("POST /v1/state HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_TRUE(RunUntil([&] { return absl::StrContains(client->received(), "100 Continue"); }));
  EXPECT_EQ(client->received(), "HTTP/1.1 100 Continue\r\n\r\n");
  client->Write("hello");
  ASSERT_TRUE(RunUntil([&] { return client->responses().size() == 2; }));
  EXPECT_EQ(client->responses()[1].body, "hello");
}

TEST_F(ServerTest, ChunkedRequestBody) {
  StartServer(
      [](const Request& request, Responder responder) { responder.Send(Text(request.body)); });
  Client* client = Connect();
  client->Write("PUT /v1/state HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
  client->Write("2\r\nde\r\n0\r\n\r\n");
  ASSERT_TRUE(WaitResponses(client, 1));
  EXPECT_EQ(client->responses()[0].body, "abcde");
}

TEST_F(ServerTest, CloseRunsOnClosedCallbacksAndTheLoopRunsDry) {
  int closed = 0;
  Responder kept;
  StartServer([&](const Request&, Responder responder) {
    kept = responder;
    kept.OnClosed([&] { ++closed; });
    kept.StartStream(200, "application/x-ndjson");
    kept.WriteChunk("{}\n");
  });
  Client* client = Connect();
  client->Write(Get("/watch"));
  ASSERT_TRUE(RunUntil([&] { return kept.alive() && client->received().size() > 0; }));
  server_->Close();
  EXPECT_EQ(closed, 1);  // synchronously, while what the callback uses still exists
  EXPECT_FALSE(kept.alive());
  server_->Close();  // idempotent
  ASSERT_TRUE(RunUntil([&] { return client->ended(); }));
  EXPECT_EQ(closed, 1);
}

TEST_F(ServerTest, AHandlerMayDestroyTheServer) {
  StartServer([&](const Request&, Responder responder) {
    responder.Send(Text("bye"));
    server_.reset();
  });
  Client* client = Connect();
  client->Write(Get("/quit") + Get("/never"));
  ASSERT_TRUE(RunUntil([&] { return client->ended(); }));
  EXPECT_EQ(server_, nullptr);
}

TEST_F(ServerTest, CreateFailsOnABusySocketAndWithoutAHandler) {
  StartServer(EchoPath());
  auto second = Server::Create(loop_.get(), UnixAddress(), {}, EchoPath());
  EXPECT_FALSE(second.ok());
  auto no_handler = Server::Create(loop_.get(), TcpAddress(), {}, nullptr);
  EXPECT_EQ(no_handler.status().code(), absl::StatusCode::kInvalidArgument);
}

// Admission: a check that lets in requests with `X-Key: ok` (proving their connection) and
// refuses the others with a 401.
AdmissionCheck KeyCheck(int* checks) {
  return [checks](const Request& head) {
    ++*checks;
    absl::optional<absl::string_view> key = head.Header("X-Key");
    if (key && *key == "ok") return Admission::Admit(/*proves_peer=*/true);
    if (key && *key == "open") return Admission::Admit();
    return Admission::Refuse(JsonError(401, "UNAUTHENTICATED", "no key"));
  };
}

TEST_F(ServerTest, ARefusedRequestIsAnsweredAtItsHeadersWithoutContinueAndItsBodyIsNeverRead) {
  int checks = 0;
  int handled = 0;
  ServerOptions options;
  options.admit = KeyCheck(&checks);
  options.parser.max_body_bytes = 100;
  StartServer(
      [&](const Request& request, Responder responder) {
        ++handled;
        responder.Send(Text(request.body));
      },
      options);
  // 100-continue and a body never sent: the refusal comes at once, without a Continue.
  Client* waiting = Connect();
  waiting->Write("PUT /v1/state HTTP/1.1\r\nContent-Length: 50\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_TRUE(RunUntil([&] { return waiting->ended(); }));
  EXPECT_FALSE(absl::StrContains(waiting->received(), "100 Continue")) << waiting->received();
  ASSERT_EQ(waiting->responses().size(), 1u);
  EXPECT_EQ(waiting->responses()[0].status, 401);
  EXPECT_EQ(waiting->responses()[0].headers["connection"], "close");
  // A body over the limit: refused for what it lacks, not for its size (which would say 413).
  Client* huge = Connect();
  huge->Write("PUT /v1/state HTTP/1.1\r\nContent-Length: 100000000\r\n\r\n");
  ASSERT_TRUE(RunUntil([&] { return huge->ended(); }));
  ASSERT_EQ(huge->responses().size(), 1u);
  EXPECT_EQ(huge->responses()[0].status, 401);
  // Pipelined behind an admitted request: that one is answered first.
  Client* pipelined = Connect();
  pipelined->Write("POST /a HTTP/1.1\r\nX-Key: ok\r\nContent-Length: 2\r\n\r\nhi" + Get("/b") +
                   Get("/never", "X-Key: ok\r\n"));
  ASSERT_TRUE(RunUntil([&] { return pipelined->ended(); }));
  ASSERT_EQ(pipelined->responses().size(), 2u);
  EXPECT_EQ(pipelined->responses()[0].body, "hi");
  EXPECT_EQ(pipelined->responses()[1].status, 401);
  EXPECT_EQ(handled, 1);
  EXPECT_EQ(checks, 4);
  // An admitted request with 100-continue gets its Continue.
  Client* admitted = Connect();
  admitted->Write(
      "POST /v1/state HTTP/1.1\r\nX-Key: ok\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_TRUE(RunUntil([&] { return absl::StrContains(admitted->received(), "100 Continue"); }));
  admitted->Write("hello");
  ASSERT_TRUE(RunUntil([&] { return admitted->responses().size() == 2; }));
  EXPECT_EQ(admitted->responses()[1].body, "hello");
}

TEST_F(ServerTest, UnprovenConnectionsHaveABudgetOfTheirOwnAndTheOldestMakesRoom) {
  int checks = 0;
  ServerOptions options;
  options.admit = KeyCheck(&checks);
  options.start_unproven = true;
  options.max_unproven_connections = 3;
  options.max_connections = 2;
  options.unproven_grace = absl::ZeroDuration();  // silent ones may go at once
  StartServer(EchoPath(), options, TcpAddress());
  // Three clients hold the unproven slots with requests they never finish.
  std::vector<Client*> hostile;
  for (int i = 0; i < 3; ++i) {
    hostile.push_back(Connect());
    hostile.back()->Write("GET /v1/state HTTP/1.1\r\nX-Slow: ");
  }
  ASSERT_TRUE(RunUntil([&] { return server_->unproven_count() == 3; }));
  RunUntil([] { return false; }, 20);  // hawk reads their bytes
  // A newcomer takes the oldest one's slot, proves itself and is served.
  Client* controller = Connect();
  ASSERT_TRUE(RunUntil([&] { return hostile[0]->ended(); }));
  EXPECT_FALSE(hostile[1]->ended());
  EXPECT_EQ(server_->evicted_count(), 1u);
  controller->Write(Get("/v1/workers", "X-Key: ok\r\n"));
  ASSERT_TRUE(WaitResponses(controller, 1));
  EXPECT_EQ(controller->responses()[0].status, 200);
  EXPECT_EQ(server_->unproven_count(), 2u);  // the controller left the unproven budget
  // A silent newcomer (its request may be on its way) is kept over one that already sent bytes
  // without proving anything.
  Client* silent = Connect();
  ASSERT_TRUE(RunUntil([&] { return server_->unproven_count() == 3; }));
  Client* another = Connect();
  ASSERT_TRUE(RunUntil([&] { return hostile[1]->ended(); }));
  Client* third = Connect();
  ASSERT_TRUE(RunUntil([&] { return hostile[2]->ended(); }));
  EXPECT_FALSE(silent->ended());
  // Among silent ones, the oldest goes.
  Client* fourth = Connect();
  ASSERT_TRUE(RunUntil([&] { return silent->ended(); }));
  EXPECT_FALSE(another->ended());
  EXPECT_FALSE(third->ended());
  EXPECT_FALSE(fourth->ended());
  EXPECT_FALSE(controller->ended());
  EXPECT_EQ(server_->evicted_count(), 4u);
  // The proven budget is full at max_connections: a second proof still fits, a third does not.
  another->Write(Get("/a", "X-Key: ok\r\n"));
  ASSERT_TRUE(WaitResponses(another, 1));
  EXPECT_EQ(another->responses()[0].status, 200);
  third->Write(Get("/b", "X-Key: ok\r\n"));
  ASSERT_TRUE(RunUntil([&] { return third->ended(); }));
  ASSERT_EQ(third->responses().size(), 1u);
  EXPECT_EQ(third->responses()[0].status, 503);
}

TEST_F(ServerTest, ASilentNewcomerIsKeptForItsGraceAndTheBudgetOverflowsMeanwhile) {
  int checks = 0;
  ServerOptions options;
  options.admit = KeyCheck(&checks);
  options.start_unproven = true;
  options.max_unproven_connections = 1;
  options.unproven_grace = absl::Seconds(30);
  StartServer(EchoPath(), options, TcpAddress());
  // Accepted in one burst, neither read yet: the first is not closed for the second.
  Client* first = Connect();
  Client* second = Connect();
  ASSERT_TRUE(RunUntil([&] { return server_->unproven_count() == 2; }));
  EXPECT_EQ(server_->evicted_count(), 0u);
  // Once it has sent bytes without proving anything, it is the one to go.
  first->Write("GET / HTTP/1.1\r\nX-Slow: ");
  RunUntil([] { return false; }, 20);
  Client* third = Connect();
  ASSERT_TRUE(RunUntil([&] { return first->ended(); }));
  EXPECT_FALSE(second->ended());
  third->Write(Get("/ok", "X-Key: ok\r\n"));
  ASSERT_TRUE(WaitResponses(third, 1));
  EXPECT_EQ(third->responses()[0].status, 200);
}

TEST_F(ServerTest, UnprovenConnectionsHaveShortTimeoutsAndARequestInHandKeepsItsSlot) {
  int checks = 0;
  ServerOptions options;
  options.admit = KeyCheck(&checks);
  options.start_unproven = true;
  options.max_unproven_connections = 1;
  options.unproven_header_timeout = absl::Milliseconds(100);
  options.unproven_idle_timeout = absl::Milliseconds(150);
  Responder held;
  StartServer(
      [&](const Request& request, Responder responder) {
        if (request.path == "/hold") {
          held = responder;
          return;
        }
        responder.Send(Text(request.path));
      },
      options);
  Client* slow = Connect();
  slow->Write("GET / HTTP/1.1\r\nX-Slow: ");
  ASSERT_TRUE(RunUntil([&] { return slow->ended(); }, 2000));
  ASSERT_EQ(slow->responses().size(), 1u);
  EXPECT_EQ(slow->responses()[0].status, 408);
  Client* silent = Connect();
  ASSERT_TRUE(RunUntil([&] { return silent->ended(); }, 2000));
  EXPECT_TRUE(silent->received().empty());
  // A connection nobody can prove (a probe listener) is served as unproven; its request in hand
  // keeps its slot. Newcomers are served over the budget up to four times it, then refused.
  Client* probe = Connect();
  probe->Write(Get("/hold", "X-Key: open\r\n"));
  ASSERT_TRUE(RunUntil([&] { return held.alive(); }));
  std::vector<Client*> late;
  for (int i = 0; i < 4; ++i) late.push_back(Connect());
  ASSERT_TRUE(RunUntil([&] { return late[3]->ended(); }));
  ASSERT_EQ(late[3]->responses().size(), 1u);
  EXPECT_EQ(late[3]->responses()[0].status, 503);
  held.Send(Text("held"));
  ASSERT_TRUE(WaitResponses(probe, 1));
  EXPECT_EQ(probe->responses()[0].body, "held");
}

}  // namespace
}  // namespace hawk::http
