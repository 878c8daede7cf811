// The translation unit cs_test_pch compiles so that CMake builds the tests' precompiled header
// (tests/CMakeLists.txt); every test binary reuses that header. It defines nothing.
