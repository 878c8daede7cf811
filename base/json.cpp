// Boost.JSON compiled in header-only mode into cs_base: one translation unit holds the library,
// so native and cross (aarch64) builds need only the Boost headers.
#include <boost/json/src.hpp>
