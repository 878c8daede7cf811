// OutputConstraint::from_regex: a regex's automaton behind a root SchemaNode, so that the matcher
// and ConstrainedSequence treat regex documents like schemas and grammars.
#include "engine/grammar/output_constraint.h"
#include "engine/grammar/schema.h"
#include "engine/grammar/schema_automata.h"

namespace cellserve::engine::grammar {

Result<std::shared_ptr<const OutputConstraint>> OutputConstraint::from_regex(std::string_view pattern,
                                                                             const GrammarLimits& limits) {
  CS_ASSIGN_OR_RETURN(std::shared_ptr<const Automaton> automaton, regex_document_automaton(pattern, limits));
  auto root = std::make_shared<SchemaNode>();
  root->min_cost = automaton->dist[automaton->dfa.start];
  root->growth_bound = automaton->growth;
  root->regex = std::move(automaton);
  return std::make_shared<const OutputConstraint>(std::move(root), limits);
}

}  // namespace cellserve::engine::grammar
