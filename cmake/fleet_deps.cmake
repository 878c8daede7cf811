# Libraries the fleet (hub, agent, tunnel, downloader, store) links, as imported targets:
#   cs_dep::sqlite3   SQLite, the hub's embedded store
#   cs_dep::sodium    libsodium: Ed25519 identities, SHA-256, sealed boxes
#   cs_dep::curl      libcurl: HTTPS downloads with Range resume
#   cs_dep::nghttp2   libnghttp2: HTTP/2 over the agent's outbound tunnel
#   cs_dep::tomlpp    toml++: deployment spec files
#   cs_dep::openssl   OpenSSL 3 (libssl + libcrypto): TLS for the hub and the agent's tunnel
#   cs_dep::cares     c-ares: the agent's own DNS lookups (--dns) where a phone has no resolv.conf
# Natively they come from pkg-config. Cross-compiled, Debian's multiarch packages (pkg:arm64) put
# the libraries in /usr/lib/<triplet> and most headers in the shared /usr/include, which a cross
# compiler must not search wholesale: expose just those headers, as for Boost (CMakeLists.txt).
function(cs_fleet_dependency name header_paths library)
  if(CMAKE_CROSSCOMPILING)
    set(lib_path /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/lib${library}.so)
    if(NOT EXISTS ${lib_path})
      message(FATAL_ERROR "${lib_path} missing: scripts/setup installs the ${CMAKE_SYSTEM_PROCESSOR} packages")
    endif()
    foreach(path ${header_paths})
      get_filename_component(leaf ${path} NAME)
      file(CREATE_LINK ${path} ${CMAKE_BINARY_DIR}/host-headers/${leaf} SYMBOLIC)
    endforeach()
    add_library(cs_dep::${name} SHARED IMPORTED GLOBAL)
    set_target_properties(cs_dep::${name} PROPERTIES IMPORTED_LOCATION ${lib_path})
  else()
    pkg_check_modules(cs_pc_${name} REQUIRED IMPORTED_TARGET GLOBAL ${ARGN})
    add_library(cs_dep::${name} ALIAS PkgConfig::cs_pc_${name})
  endif()
endfunction()

if(NOT CMAKE_CROSSCOMPILING)
  find_package(PkgConfig REQUIRED)
endif()
if(CMAKE_CROSSCOMPILING AND NOT CMAKE_LIBRARY_ARCHITECTURE)
  set(CMAKE_LIBRARY_ARCHITECTURE ${CMAKE_SYSTEM_PROCESSOR}-linux-gnu)
endif()
cs_fleet_dependency(sqlite3 "/usr/include/sqlite3.h" sqlite3 sqlite3)
cs_fleet_dependency(sodium "/usr/include/sodium;/usr/include/sodium.h" sodium libsodium)
cs_fleet_dependency(curl "/usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/curl" curl libcurl)
cs_fleet_dependency(nghttp2 "/usr/include/nghttp2" nghttp2 libnghttp2)
cs_fleet_dependency(tomlpp "/usr/include/toml++" tomlplusplus tomlplusplus)
cs_fleet_dependency(openssl "/usr/include/openssl" ssl openssl)
cs_fleet_dependency(cares
  "/usr/include/ares.h;/usr/include/ares_build.h;/usr/include/ares_dns.h;/usr/include/ares_nameser.h;/usr/include/ares_rules.h;/usr/include/ares_version.h"
  cares libcares)
if(CMAKE_CROSSCOMPILING)
  # OpenSSL's configuration.h / opensslconf.h are per architecture, in a second "openssl" folder
  # that the compiler finds after the shared one.
  set(arch_headers ${CMAKE_BINARY_DIR}/host-headers-arch)
  file(MAKE_DIRECTORY ${arch_headers})
  file(CREATE_LINK /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openssl ${arch_headers}/openssl SYMBOLIC)
  set_target_properties(cs_dep::openssl PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES ${arch_headers}
    INTERFACE_LINK_LIBRARIES /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/libcrypto.so)
endif()
if(CMAKE_CROSSCOMPILING)
  # pkg-config adds these natively (tomlplusplus.pc): the library is built, not header-only.
  set_target_properties(cs_dep::tomlpp PROPERTIES INTERFACE_COMPILE_DEFINITIONS "TOML_HEADER_ONLY=0;TOML_SHARED_LIB=1")
endif()

# cs_dep::pq (optional): libpq, for the hub's PostgreSQL store (fleet/store/pg_store.cpp).
# CELLSERVE_POSTGRES defaults ON where pkg-config finds libpq, OFF otherwise. A cross build never
# looks: the phone bundle (scripts/bundle-aarch64) runs an agent, not a hub, and must not carry
# libpq and what it pulls in (Kerberos, LDAP).
if(CMAKE_CROSSCOMPILING)
  set(cs_postgres_default OFF)
else()
  pkg_check_modules(cs_pc_pq QUIET IMPORTED_TARGET GLOBAL libpq)
  set(cs_postgres_default ${cs_pc_pq_FOUND})
endif()
option(CELLSERVE_POSTGRES "Build the hub's PostgreSQL store (libpq)" ${cs_postgres_default})
if(CELLSERVE_POSTGRES)
  if(CMAKE_CROSSCOMPILING OR NOT cs_pc_pq_FOUND)
    message(FATAL_ERROR "CELLSERVE_POSTGRES needs libpq (pkg-config libpq, native builds only): install libpq-dev or "
                        "configure with -DCELLSERVE_POSTGRES=OFF")
  endif()
  add_library(cs_dep::pq ALIAS PkgConfig::cs_pc_pq)
endif()
