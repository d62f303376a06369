#include "agent/metrics/exposition.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hawk::metrics {

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)), counts_(upper_bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  size_t bucket =
      std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) - upper_bounds_.begin();
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

std::vector<double> LatencyBucketsSeconds() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

namespace {

// A sample value as the format writes it: integers without a fraction, +Inf/-Inf/NaN by name.
std::string Number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  // The shortest form that reads back as the same double.
  char buffer[32];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

std::string Escape(absl::string_view text, bool quotes) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

void AppendLabels(const Labels& labels, const std::pair<std::string, std::string>* extra,
                  std::string* out) {
  if (labels.empty() && extra == nullptr) return;
  *out += '{';
  bool first = true;
  auto one = [&](const std::pair<std::string, std::string>& label) {
    if (!first) *out += ',';
    first = false;
    absl::StrAppend(out, label.first, "=\"", Escape(label.second, /*quotes=*/true), "\"");
  };
  for (const auto& label : labels) one(label);
  if (extra != nullptr) one(*extra);
  *out += '}';
}

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

std::string FormatText(std::vector<Family> families) {
  std::sort(families.begin(), families.end(),
            [](const Family& a, const Family& b) { return a.name < b.name; });
  std::string out;
  for (Family& family : families) {
    if (family.samples.empty() && family.histograms.empty()) continue;
    absl::StrAppend(&out, "# HELP ", family.name, " ", Escape(family.help, /*quotes=*/false), "\n",
                    "# TYPE ", family.name, " ", TypeName(family.type), "\n");
    std::sort(family.samples.begin(), family.samples.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [labels, value] : family.samples) {
      out += family.name;
      AppendLabels(labels, nullptr, &out);
      absl::StrAppend(&out, " ", Number(value), "\n");
    }
    std::sort(family.histograms.begin(), family.histograms.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [labels, histogram] : family.histograms) {
      uint64_t cumulative = 0;
      const std::vector<double>& bounds = histogram->upper_bounds();
      for (size_t i = 0; i <= bounds.size(); ++i) {
        cumulative += histogram->counts()[i];
        std::pair<std::string, std::string> le{
            "le", i < bounds.size() ? Number(bounds[i]) : std::string("+Inf")};
        absl::StrAppend(&out, family.name, "_bucket");
        AppendLabels(labels, &le, &out);
        absl::StrAppend(&out, " ", cumulative, "\n");
      }
      absl::StrAppend(&out, family.name, "_sum");
      AppendLabels(labels, nullptr, &out);
      absl::StrAppend(&out, " ", Number(histogram->sum()), "\n", family.name, "_count");
      AppendLabels(labels, nullptr, &out);
      absl::StrAppend(&out, " ", histogram->count(), "\n");
    }
  }
  return out;
}

bool IsValidMetricName(absl::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = absl::ascii_isalpha(c) || c == '_' || c == ':' || (i > 0 && absl::ascii_isdigit(c));
    if (!ok) return false;
  }
  return true;
}

bool IsValidLabelName(absl::string_view name) {
  if (name.empty() || absl::StartsWith(name, "__")) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = absl::ascii_isalpha(c) || c == '_' || (i > 0 && absl::ascii_isdigit(c));
    if (!ok) return false;
  }
  return true;
}

}  // namespace hawk::metrics
