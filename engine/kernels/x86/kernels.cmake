# x86-64 kernels. Files under avx2/ are the only ones compiled with AVX2 flags; the tables that
# point at them are compiled for the baseline so nothing wider runs before dispatch checks the CPU.
file(GLOB cs_x86_avx2_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/x86/avx2/*.cpp)
set_source_files_properties(${cs_x86_avx2_sources} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mbmi2")
# AVX-512 kernels (avx512/) and AVX-512 VNNI kernels (avx512_vnni/, 256-bit registers with the
# EVEX VNNI instructions).
file(GLOB cs_x86_avx512_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/x86/avx512/*.cpp)
set_source_files_properties(${cs_x86_avx512_sources} PROPERTIES COMPILE_OPTIONS
  "-mavx2;-mfma;-mf16c;-mbmi2;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq")
file(GLOB cs_x86_vnni_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/x86/avx512_vnni/*.cpp)
set_source_files_properties(${cs_x86_vnni_sources} PROPERTIES COMPILE_OPTIONS
  "-mavx2;-mfma;-mf16c;-mbmi2;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni")
# AVX512-BF16 kernels (avx512_bf16/).
file(GLOB cs_x86_bf16_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/x86/avx512_bf16/*.cpp)
set_source_files_properties(${cs_x86_bf16_sources} PROPERTIES COMPILE_OPTIONS
  "-mavx2;-mfma;-mf16c;-mbmi2;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512bf16")
# AVX-VNNI kernels (avx_vnni/): the VEX form of vpdpbusd, for CPUs without AVX-512.
file(GLOB cs_x86_avx_vnni_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/x86/avx_vnni/*.cpp)
set_source_files_properties(${cs_x86_avx_vnni_sources} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mbmi2;-mavxvnni")
file(GLOB cs_x86_table_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/x86/*.cpp)
target_sources(cs_kernels PRIVATE ${cs_x86_table_sources} ${cs_x86_avx2_sources} ${cs_x86_avx_vnni_sources} ${cs_x86_avx512_sources} ${cs_x86_vnni_sources} ${cs_x86_bf16_sources})
target_compile_definitions(cs_kernels PUBLIC CELLSERVE_KERNELS_X86)
