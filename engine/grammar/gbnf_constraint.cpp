// OutputConstraint::from_gbnf: a compiled GBNF program behind a root SchemaNode, so that the
// matcher and ConstrainedSequence treat grammars and schemas alike.
#include "engine/grammar/gbnf.h"
#include "engine/grammar/output_constraint.h"
#include "engine/grammar/schema.h"

namespace cellserve::engine::grammar {

Result<std::shared_ptr<const OutputConstraint>> OutputConstraint::from_gbnf(
    std::string_view grammar, const GrammarLimits& limits,
    const std::map<std::string, std::shared_ptr<const OutputConstraint>>& externals) {
  CS_ASSIGN_OR_RETURN(std::shared_ptr<const GbnfProgram> program, compile_gbnf(grammar, limits, externals));
  auto root = std::make_shared<SchemaNode>();
  root->min_cost = program->rest_cost[program->start];
  // No small bound holds: a grammar's candidate parses may differ in cost by up to
  // max_grammar_depth times the longest alternative (or a whole external JSON value), and one
  // byte can end the cheap ones. kInf makes mask_logits check every token's cost after it.
  root->growth_bound = kInf;
  root->grammar = std::move(program);
  return std::make_shared<const OutputConstraint>(std::move(root), limits);
}

}  // namespace cellserve::engine::grammar
