# Every dependency comes from a Debian 12 package (scripts/setup.sh installs them).

# Where hawk's build keeps what it downloads, outside the repository and the build directories:
# $HAWK_CACHE_DIR, default ${XDG_CACHE_HOME:-$HOME/.cache}/hawk (scripts/haproxy-versions.sh
# uses the same directory).
set(hawk_cache_dir "$ENV{HAWK_CACHE_DIR}")
if(NOT hawk_cache_dir)
  if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
    set(hawk_cache_dir "$ENV{XDG_CACHE_HOME}/hawk")
  else()
    set(hawk_cache_dir "$ENV{HOME}/.cache/hawk")
  endif()
endif()

find_package(PkgConfig REQUIRED)
pkg_check_modules(libuv REQUIRED IMPORTED_TARGET libuv>=1.44)
find_package(simdjson CONFIG REQUIRED)
find_package(absl CONFIG REQUIRED)
# TLS for the API (agent/tls): Debian's libssl-dev, OpenSSL 3.0.
find_package(OpenSSL 3.0 REQUIRED)

# llhttp: prefer an installed library; otherwise compile the C sources that Debian's
# node-llhttp package ships (llhttp 8.1) into a static target.
find_package(llhttp CONFIG QUIET)
if(TARGET llhttp::llhttp_static)
  add_library(hawk_llhttp ALIAS llhttp::llhttp_static)
elseif(TARGET llhttp::llhttp)
  add_library(hawk_llhttp ALIAS llhttp::llhttp)
else()
  find_path(LLHTTP_INCLUDE_DIR llhttp.h PATHS /usr/share/include/llhttp /usr/include REQUIRED)
  find_path(LLHTTP_SOURCE_DIR llhttp.c PATHS /usr/share/llhttp REQUIRED)
  add_library(hawk_llhttp STATIC
    ${LLHTTP_SOURCE_DIR}/api.c ${LLHTTP_SOURCE_DIR}/http.c ${LLHTTP_SOURCE_DIR}/llhttp.c)
  target_include_directories(hawk_llhttp SYSTEM PUBLIC ${LLHTTP_INCLUDE_DIR})
  target_compile_options(hawk_llhttp PRIVATE -w)
  set_target_properties(hawk_llhttp PROPERTIES POSITION_INDEPENDENT_CODE ON)
endif()

if(HAWK_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
  find_package(Protobuf REQUIRED)
endif()
if(HAWK_BUILD_BENCH)
  find_package(benchmark CONFIG REQUIRED)
endif()
