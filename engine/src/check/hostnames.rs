//! Canonical hostnames (the spec's validate row "canonical hostnames"):
//! the hostname an instance's machines take, its name with the `-NNN`
//! suffix, is an RFC 1123 label, so the declared name is refused before a
//! provider or a resolver meets it. The alias pool's names are checked
//! with the recorded state (`state::alias_pool`); names already claimed in
//! a group's server registry, before a real run launches (`hostname_claims`).

use csis_model::Origin;
use csis_model::models::Instance;

use crate::check::context::Checks;
use crate::check::formats::hostname_problem;

impl Checks<'_> {
    /// An instance's canonical hostname is an RFC 1123 label.
    pub(super) fn canonical_hostname(&mut self, inst: &Instance, origin: Option<&Origin>) {
        let name = inst.root.name();
        let hostname = crate::state::launch_params::canonical_hostname(
            self.db,
            self.tree,
            &csis_model::naming::safe_name(name),
            inst.ephemeral,
        );
        if let Some(problem) = hostname_problem(&hostname) {
            self.err(
                format!(
                    "instance '{name}': canonical hostname '{hostname}' {problem} (RFC 1123 label, at most 63 characters of letters, digits and hyphens, neither starting nor ending with a hyphen) -- shorten or respell the declared name (the suffix -NNN counts)"
                ),
                origin.map(|o| o.key("name")),
            );
        }
    }
}
