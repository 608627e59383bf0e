//! The lifecycles a run can request, in their fixed order, and the parsing
//! of `csis run [LIFECYCLES...]`.

use csis_model::Vct;
use csis_plugin_api::ExecutionLifecyclePhase as P;
use csis_plugin_api::LifecycleSpec;

/// The built-in lifecycles, in order. release and retention are the core's
/// own: no phases, they contribute through after-generate hooks.
pub fn builtin_lifecycles() -> Vec<LifecycleSpec> {
    vec![
        LifecycleSpec {
            name: "identity",
            aliases: &["id"],
            phases: vec![
                (P::UserGeneration, Vct::UserBuilderModel),
                (P::GroupGeneration, Vct::GroupBuilderModel),
            ],
            after: None,
            description: "users and groups",
        },
        LifecycleSpec {
            name: "storage",
            aliases: &["storages"],
            phases: vec![(P::StorageGeneration, Vct::StorageBuilderModel)],
            after: None,
            description: "storages",
        },
        LifecycleSpec {
            name: "base-image",
            aliases: &["base-images", "base"],
            phases: vec![(P::ImageGeneration, Vct::ImageBuilderModel)],
            after: None,
            description: "base images baked from the OS builders' vendor images",
        },
        LifecycleSpec {
            name: "instance-image",
            aliases: &["instance-images", "instances"],
            phases: vec![
                (P::ImageGeneration, Vct::ImageBuilderModel),
                (P::InstanceGeneration, Vct::InstanceBuilderModel),
            ],
            after: None,
            description: "instance images and the instances launched from them",
        },
        LifecycleSpec {
            name: "release",
            aliases: &[],
            phases: Vec::new(),
            after: Some("instance-image"),
            description: "release marks on verified builds",
        },
        LifecycleSpec {
            name: "retention",
            aliases: &[],
            phases: Vec::new(),
            after: Some("release"),
            description: "disposal of builds the declared retention no longer keeps",
        },
    ]
}

/// Add a plugin's lifecycle after the one it names. A name may not be
/// `all`, a registered name, or contain `/`.
pub fn register_lifecycle(
    lifecycles: &mut Vec<LifecycleSpec>,
    spec: LifecycleSpec,
) -> Result<(), String> {
    let name = spec.name;
    if name == "all" || name.contains('/') || name.is_empty() {
        return Err(format!(
            "lifecycle '{name}': a lifecycle name may not be 'all' or contain '/'"
        ));
    }
    if lifecycles
        .iter()
        .any(|l| l.name == name || l.aliases.contains(&name))
    {
        return Err(format!("lifecycle '{name}' is already registered"));
    }
    let Some(after) = spec.after else {
        return Err(format!(
            "lifecycle '{name}' must say which lifecycle it runs after"
        ));
    };
    let Some(at) = lifecycles.iter().position(|l| l.name == after) else {
        return Err(format!(
            "lifecycle '{name}' runs after '{after}', which is not registered"
        ));
    };
    lifecycles.insert(at + 1, spec);
    Ok(())
}

/// The requested lifecycles in declared order, never argument order. No
/// names means none; `all` means every one.
pub fn parse_lifecycles<'a>(
    lifecycles: &'a [LifecycleSpec],
    requested: &[String],
) -> Result<Vec<&'a LifecycleSpec>, String> {
    let mut wanted = vec![false; lifecycles.len()];
    for r in requested {
        let r = r.trim();
        if r == "all" {
            wanted.iter_mut().for_each(|w| *w = true);
            continue;
        }
        match lifecycles
            .iter()
            .position(|l| l.name == r || l.aliases.contains(&r))
        {
            Some(i) => wanted[i] = true,
            None => {
                let known: Vec<&str> = lifecycles.iter().map(|l| l.name).collect();
                let names = std::iter::once("all")
                    .chain(known.iter().copied())
                    .chain(lifecycles.iter().flat_map(|l| l.aliases.iter().copied()));
                let hint = csis_model::suggest::did_you_mean(r, names)
                    .map(|m| format!(" did you mean '{m}'?"))
                    .unwrap_or_default();
                return Err(format!(
                    "unknown lifecycle '{r}';{hint} known: all, {}",
                    known.join(", ")
                ));
            }
        }
    }
    Ok(lifecycles
        .iter()
        .zip(wanted)
        .filter(|(_, w)| *w)
        .map(|(l, _)| l)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&LifecycleSpec]) -> Vec<&'static str> {
        v.iter().map(|l| l.name).collect()
    }

    #[test]
    fn declared_order_and_aliases() {
        let all = builtin_lifecycles();
        let got =
            parse_lifecycles(&all, &["instances".into(), "id".into(), "base".into()]).unwrap();
        assert_eq!(names(&got), ["identity", "base-image", "instance-image"]);
        let got = parse_lifecycles(&all, &["all".into()]).unwrap();
        assert_eq!(
            names(&got),
            [
                "identity",
                "storage",
                "base-image",
                "instance-image",
                "release",
                "retention"
            ]
        );
        assert_eq!(
            parse_lifecycles(&all, &["bogus".into()]).unwrap_err(),
            "unknown lifecycle 'bogus'; known: all, identity, storage, base-image, instance-image, release, retention"
        );
    }

    #[test]
    fn plugin_lifecycles_are_placed_after_the_one_they_name() {
        let mut all = builtin_lifecycles();
        let spec = |name, after| LifecycleSpec {
            name,
            aliases: &[],
            phases: Vec::new(),
            after,
            description: "",
        };
        register_lifecycle(&mut all, spec("audit", Some("storage"))).unwrap();
        assert_eq!(all[2].name, "audit");
        assert!(register_lifecycle(&mut all, spec("all", Some("storage"))).is_err());
        assert!(register_lifecycle(&mut all, spec("a/b", Some("storage"))).is_err());
        assert!(register_lifecycle(&mut all, spec("storage", Some("release"))).is_err());
        assert!(register_lifecycle(&mut all, spec("x", Some("nowhere"))).is_err());
    }
}
