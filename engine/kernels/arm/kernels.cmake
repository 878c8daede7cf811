# aarch64 kernels. NEON is part of the base architecture; dotprod/ and i8mm/ files are the only
# ones compiled with those extensions, and the tables pointing at them are baseline code, so
# nothing newer runs before dispatch checks the CPU's hardware capabilities.
file(GLOB cs_arm_neon_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/arm/neon/*.cpp)
file(GLOB cs_arm_dotprod_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/arm/dotprod/*.cpp)
file(GLOB cs_arm_i8mm_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/arm/i8mm/*.cpp)
set_source_files_properties(${cs_arm_dotprod_sources} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod")
set_source_files_properties(${cs_arm_i8mm_sources} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod+i8mm")
file(GLOB cs_arm_table_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/arm/*.cpp)
target_sources(cs_kernels PRIVATE ${cs_arm_table_sources} ${cs_arm_neon_sources} ${cs_arm_dotprod_sources}
                                  ${cs_arm_i8mm_sources})
target_compile_definitions(cs_kernels PUBLIC CELLSERVE_KERNELS_ARM)
