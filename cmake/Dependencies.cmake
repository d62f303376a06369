# Every dependency comes from a Debian 12 package (scripts/setup.sh installs them); with
# HAWK_STATIC_BINARY, simdjson comes from Debian's source tarball of the same version instead.
#
# HAWK_STATIC_BINARY (the default and release presets): abseil, libuv, OpenSSL and simdjson are
# linked from static archives, and agent/CMakeLists.txt links hawk itself as a static-PIE with
# packed relative relocations. Why: issue 11 (idle RSS ≤ 4 MiB). Dynamically linked, hawk's idle
# VmRSS was ~7.8 MiB, of which 1.2 MiB hawk's own memory and the rest pages of ~50 shared
# libraries (41 of them abseil's) and the work of relocating them; static-PIE, ~3.9 MiB, with
# ASLR kept (hawk parses untrusted input on a socket). It also leaves the image's runtime stage
# without any library package. Test and benchmark programs link the same archives (they test
# what ships) but stay dynamically linked executables. The asan and fuzz presets keep the
# dynamic link: the sanitizer runtimes cannot be linked into a static-PIE.

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

find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
if(HAWK_STATIC_BINARY)
  # libuv1-dev's second .pc file names libuv_a.a (and glibc's libdl.a, libpthread.a, librt.a).
  pkg_check_modules(libuv REQUIRED IMPORTED_TARGET libuv-static>=1.44)
else()
  pkg_check_modules(libuv REQUIRED IMPORTED_TARGET libuv>=1.44)
endif()

find_package(absl CONFIG REQUIRED)
if(HAWK_STATIC_BINARY)
  # libabsl-dev ships a static archive beside every libabsl_*.so.20220623.0.0, but its CMake
  # package imports only the shared ones: point each imported library at its archive. The
  # targets' link interfaces stay as abseil declared them, so CMake orders the archives.
  get_directory_property(_hawk_imported IMPORTED_TARGETS)
  foreach(target IN LISTS _hawk_imported)
    if(NOT target MATCHES "^absl::")
      continue()
    endif()
    get_target_property(type ${target} TYPE)
    if(NOT type STREQUAL "SHARED_LIBRARY")
      continue()
    endif()
    get_target_property(configs ${target} IMPORTED_CONFIGURATIONS)
    foreach(config IN LISTS configs)
      get_target_property(location ${target} IMPORTED_LOCATION_${config})
      string(REGEX REPLACE "\\.so(\\.[0-9]+)*$" ".a" archive "${location}")
      if(NOT EXISTS "${archive}")
        message(FATAL_ERROR "HAWK_STATIC_BINARY: ${target} has no static archive (${archive}); "
                            "is libabsl-dev installed? Or configure with -DHAWK_STATIC_BINARY=OFF")
      endif()
      set_target_properties(${target} PROPERTIES IMPORTED_LOCATION_${config} "${archive}"
                                                 IMPORTED_SONAME_${config} "")
    endforeach()
  endforeach()
endif()

# TLS for the API (agent/tls): Debian's libssl-dev, OpenSSL 3.0 (libssl.a and libcrypto.a when
# static; FindOpenSSL then adds libdl and Threads itself).
if(HAWK_STATIC_BINARY)
  set(OPENSSL_USE_STATIC_LIBS TRUE)
endif()
find_package(OpenSSL 3.0 REQUIRED)

# simdjson: Debian's libsimdjson-dev (3.0.1) ships only a shared library, which itself needs
# libstdc++.so. For a static link, hawk compiles the amalgamated simdjson.cpp of Debian's own
# source tarball of the same version (the one libsimdjson-dev is built from), downloaded once into
# the cache and checked against its SHA-256. Its simdjson.h is byte-identical to the installed
# /usr/include/simdjson.h; the target uses the tarball's, so that header and code always come from
# one release, and the build needs no libsimdjson-dev. A missing or wrong tarball fails the
# configuration (rather than falling back to the dynamic link, which would quietly ship a binary
# twice the memory): the message says where to put the file, or how to build without it.
if(HAWK_STATIC_BINARY)
  set(_hawk_simdjson_version 3.0.1)
  set(_hawk_simdjson_url
      "http://deb.debian.org/debian/pool/main/s/simdjson/simdjson_${_hawk_simdjson_version}.orig.tar.gz")
  set(_hawk_simdjson_sha256 156b1bc5eb0561b2bd166b46d191fd3d95a3e709cc63761477d3b7aec2b6e9ed)
  set(HAWK_SIMDJSON_TARBALL
      "${hawk_cache_dir}/simdjson/simdjson_${_hawk_simdjson_version}.orig.tar.gz" CACHE FILEPATH
      "Debian's simdjson ${_hawk_simdjson_version} source tarball (downloaded here when missing)")
  set(_hawk_simdjson_help
      "Get it with\n  curl -fL --create-dirs -o '${HAWK_SIMDJSON_TARBALL}' ${_hawk_simdjson_url}\n"
      "(or point -DHAWK_SIMDJSON_TARBALL=<file> at a copy), or link dynamically against "
      "libsimdjson-dev with -DHAWK_STATIC_BINARY=OFF.")
  if(NOT EXISTS "${HAWK_SIMDJSON_TARBALL}")
    message(STATUS "hawk: downloading ${_hawk_simdjson_url}")
    get_filename_component(_hawk_dir "${HAWK_SIMDJSON_TARBALL}" DIRECTORY)
    file(MAKE_DIRECTORY "${_hawk_dir}")
    # Into a .part file renamed only when whole and verified: an interrupted download leaves
    # nothing that the next configuration would take for the tarball.
    file(DOWNLOAD "${_hawk_simdjson_url}" "${HAWK_SIMDJSON_TARBALL}.part"
         INACTIVITY_TIMEOUT 60 TIMEOUT 600 STATUS _hawk_status)
    list(GET _hawk_status 0 _hawk_code)
    if(_hawk_code EQUAL 0)
      file(SHA256 "${HAWK_SIMDJSON_TARBALL}.part" _hawk_sha256)
    endif()
    if(NOT _hawk_code EQUAL 0 OR NOT _hawk_sha256 STREQUAL _hawk_simdjson_sha256)
      file(REMOVE "${HAWK_SIMDJSON_TARBALL}.part")
      if(_hawk_code EQUAL 0)
        set(_hawk_status "SHA-256 ${_hawk_sha256}, expected ${_hawk_simdjson_sha256}")
      endif()
      message(FATAL_ERROR "HAWK_STATIC_BINARY needs simdjson's source; downloading "
                          "${_hawk_simdjson_url} failed (${_hawk_status}). "
                          ${_hawk_simdjson_help})
    endif()
    file(RENAME "${HAWK_SIMDJSON_TARBALL}.part" "${HAWK_SIMDJSON_TARBALL}")
  endif()
  file(SHA256 "${HAWK_SIMDJSON_TARBALL}" _hawk_sha256)
  if(NOT _hawk_sha256 STREQUAL _hawk_simdjson_sha256)
    message(FATAL_ERROR "${HAWK_SIMDJSON_TARBALL} has SHA-256 ${_hawk_sha256}, not Debian's "
                        "simdjson ${_hawk_simdjson_version} tarball's ${_hawk_simdjson_sha256}. "
                        "Remove it to download it again. " ${_hawk_simdjson_help})
  endif()
  # Unpacked into the build directory, again whenever the tarball changes.
  set(_hawk_simdjson_dir "${CMAKE_BINARY_DIR}/_deps/simdjson-${_hawk_simdjson_version}/singleheader")
  set(_hawk_stamp "${CMAKE_BINARY_DIR}/_deps/simdjson.sha256")
  set(_hawk_unpacked "")
  if(EXISTS "${_hawk_stamp}")
    file(READ "${_hawk_stamp}" _hawk_unpacked)
  endif()
  if(NOT _hawk_unpacked STREQUAL _hawk_sha256 OR NOT EXISTS "${_hawk_simdjson_dir}/simdjson.cpp")
    file(REMOVE_RECURSE "${CMAKE_BINARY_DIR}/_deps/simdjson-${_hawk_simdjson_version}")
    file(ARCHIVE_EXTRACT INPUT "${HAWK_SIMDJSON_TARBALL}" DESTINATION "${CMAKE_BINARY_DIR}/_deps"
         PATTERNS "simdjson-${_hawk_simdjson_version}/singleheader/simdjson.*")
    file(WRITE "${_hawk_stamp}" "${_hawk_sha256}")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${HAWK_SIMDJSON_TARBALL}")

  add_library(hawk_simdjson STATIC "${_hawk_simdjson_dir}/simdjson.cpp")
  target_include_directories(hawk_simdjson SYSTEM PUBLIC "${_hawk_simdjson_dir}")
  # As Debian's simdjson package exports them (its simdjsonTargets.cmake).
  target_compile_definitions(hawk_simdjson PUBLIC SIMDJSON_THREADS_ENABLED=1)
  target_link_libraries(hawk_simdjson PUBLIC Threads::Threads)
  target_compile_options(hawk_simdjson PRIVATE -w)
  set_target_properties(hawk_simdjson PROPERTIES POSITION_INDEPENDENT_CODE ON)
  add_library(simdjson::simdjson ALIAS hawk_simdjson)
else()
  find_package(simdjson CONFIG REQUIRED)
endif()

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
