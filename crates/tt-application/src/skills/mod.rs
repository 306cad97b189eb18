//! Skills for agents: which skills an invocation sees, in which scope order and after which
//! overrides (`resolve`), the three tools `skill.list`, `skill.search` and `skill.read` with their
//! per-invocation read budget (`tools`), and their model-facing specs (`specs`).

pub mod resolve;
pub mod specs;
pub mod tools;

#[cfg(test)]
mod behaviour_tests;

pub use resolve::{
    EffectiveSkill, ResolvedSkills, is_skill_visible, resolve_invocation_skills, skill_scope_order,
};
pub use specs::skill_tool_spec;
pub use tools::{SkillReadBudget, SkillToolEnv, execute};
