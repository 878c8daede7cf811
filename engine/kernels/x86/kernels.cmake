# x86-64 kernels. Files under avx2/ are the only ones compiled with AVX2 flags; the tables that
# point at them are compiled for the baseline so nothing wider runs before dispatch checks the CPU.
# (AVX-512 tables are not built yet: no host of this project's CI has been seen to run them.)
file(GLOB cs_x86_avx2_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/x86/avx2/*.cpp)
set_source_files_properties(${cs_x86_avx2_sources} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mbmi2")
file(GLOB cs_x86_table_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/x86/*.cpp)
target_sources(cs_kernels PRIVATE ${cs_x86_table_sources} ${cs_x86_avx2_sources})
target_compile_definitions(cs_kernels PUBLIC CELLSERVE_KERNELS_X86)
