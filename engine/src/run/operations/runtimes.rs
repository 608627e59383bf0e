//! `runtime describe` and `runtime empty`: a runtime's own answer of where
//! it is and what csis owns there, and the disposal of every build of an
//! ephemeral runtime.

use std::collections::BTreeSet;

use csis_model::Vct;

use super::Ops;
use crate::load::builders::builders;

impl Ops<'_> {
    /// `runtime describe RUNTIME`: the runtime's own lines (region,
    /// account, the declared network as the provider knows it; a local
    /// store), then what it holds against lineage and the launch records.
    pub fn runtime_describe(&self, runtime: &str) -> Result<String, String> {
        let b = builders(&self.ws.db, self.ws.tree);
        let decl = b
            .resolve(Vct::RuntimeBuilderModel, runtime)
            .ok_or_else(|| format!("runtime describe: unknown runtime '{runtime}'"))?;
        let (name, hooks) = self.runtime_hooks("runtime describe", runtime)?;
        let ephemeral = decl.base.runtime_model().is_some_and(|m| m.ephemeral);
        let mut out = vec![format!(
            "runtime {name} ({}, {})",
            decl.model,
            if ephemeral { "ephemeral" } else { "durable" }
        )];
        let described = hooks
            .describe(&self.ws.root)
            .map_err(|e| format!("runtime describe: runtime '{name}' could not be asked: {e}"))?;
        out.extend(described.into_iter().map(|l| format!("  {l}")));
        let seen = hooks
            .observe(&self.ws.root, &self.ws.tree_id())
            .map_err(|e| {
                format!("runtime describe: runtime '{name}' could not be asked what exists: {e}")
            })?;
        let lineage = self.lineage()?;
        let recorded: BTreeSet<&str> = lineage
            .builds
            .iter()
            .filter(|r| r.runtime == name)
            .map(|r| r.build_id.as_str())
            .collect();
        let found: BTreeSet<&str> = seen.images.iter().map(|i| i.build_id.as_str()).collect();
        let foreign = found.difference(&recorded).count();
        let absent = recorded.difference(&found).count();
        out.push(format!(
            "  builds: {} found with lineage tags ({} recorded in lineage, {foreign} not), {absent} recorded but absent",
            found.len(),
            found.len() - foreign
        ));
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        let machines: Vec<String> = seen
            .instances
            .iter()
            .map(|m| {
                let facts: Vec<&str> = [m.instance_id.as_deref(), m.power.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect();
                if facts.is_empty() {
                    m.name.clone()
                } else {
                    format!("{} ({})", m.name, facts.join(", "))
                }
            })
            .collect();
        out.push(format!("  instances: {}", list(&machines)));
        out.push(format!("  storages: {}", list(&seen.storages)));
        Ok(out.join("\n"))
    }

    /// `runtime empty RUNTIME`: on an ephemeral runtime, dispose every
    /// recorded build, keeping as retention debt what an instance or image
    /// is pinned to and what is released (the retention rule of an
    /// ephemeral runtime, applied now).
    pub fn runtime_empty(&self, runtime: &str) -> Result<String, String> {
        let b = builders(&self.ws.db, self.ws.tree);
        let decl = b
            .resolve(Vct::RuntimeBuilderModel, runtime)
            .ok_or_else(|| format!("runtime empty: unknown runtime '{runtime}'"))?;
        if !decl.base.runtime_model().is_some_and(|m| m.ephemeral) {
            return Err(format!(
                "runtime empty: runtime '{}' is not ephemeral; its builds are kept by decision -- dispose them with 'dispose image --all --runtime {}' (or declare it ephemeral: true)",
                decl.name(),
                decl.name()
            ));
        }
        self.dispose(&[], false, Some(decl.name()), true)
    }
}
