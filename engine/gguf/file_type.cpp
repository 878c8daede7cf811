#include "engine/gguf/file_type.h"

#include <array>
#include <utility>

namespace cellserve::engine {

std::optional<std::string_view> file_type_name(uint32_t file_type) {
  // Values from llama.h (enum llama_ftype); gaps are removed types.
  static constexpr std::array<std::pair<uint32_t, std::string_view>, 33> kNames = {{
      {0, "ALL_F32"},           {1, "MOSTLY_F16"},     {2, "MOSTLY_Q4_0"},    {3, "MOSTLY_Q4_1"},
      {7, "MOSTLY_Q8_0"},       {8, "MOSTLY_Q5_0"},    {9, "MOSTLY_Q5_1"},    {10, "MOSTLY_Q2_K"},
      {11, "MOSTLY_Q3_K_S"},    {12, "MOSTLY_Q3_K_M"}, {13, "MOSTLY_Q3_K_L"}, {14, "MOSTLY_Q4_K_S"},
      {15, "MOSTLY_Q4_K_M"},    {16, "MOSTLY_Q5_K_S"}, {17, "MOSTLY_Q5_K_M"}, {18, "MOSTLY_Q6_K"},
      {19, "MOSTLY_IQ2_XXS"},   {20, "MOSTLY_IQ2_XS"}, {21, "MOSTLY_Q2_K_S"}, {22, "MOSTLY_IQ3_XS"},
      {23, "MOSTLY_IQ3_XXS"},   {24, "MOSTLY_IQ1_S"},  {25, "MOSTLY_IQ4_NL"}, {26, "MOSTLY_IQ3_S"},
      {27, "MOSTLY_IQ3_M"},     {28, "MOSTLY_IQ2_S"},  {29, "MOSTLY_IQ2_M"},  {30, "MOSTLY_IQ4_XS"},
      {31, "MOSTLY_IQ1_M"},     {32, "MOSTLY_BF16"},   {36, "MOSTLY_TQ1_0"},  {37, "MOSTLY_TQ2_0"},
      {38, "MOSTLY_MXFP4_MOE"},
  }};
  for (const auto& [value, name] : kNames) {
    if (value == file_type) return name;
  }
  return std::nullopt;
}

}  // namespace cellserve::engine
