//! Macro forms that must compile and run: messages, stateful handler groups side by side,
//! contexts by value with custom errors, and generated code under shadowed names. Their
//! misuse counterparts, which must fail to compile, are `tests/macros-ui`.

mod context_by_value_and_custom_error;
mod hygiene_shadowed_names;
mod message_forms;
mod stateful_groups_side_by_side;
