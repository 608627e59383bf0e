//! Generation through the plugin contract: hook order, failures with the
//! spec's messages, run hooks, plugin lifecycles, incremental emission.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use csis_engine::db::run_input::RunOptions;
use csis_engine::db::system::MemorySystem;
use csis_engine::run::{Level, RunRequest, RunSummary, run};
use csis_engine::workspace::LoadOptions;
use csis_model::models::BaseModelKind;
use csis_model::{Fields, Map, Value, Vct};
use csis_plugin_api::{
    Asset, AssetSet, Builder, BuilderDecl, CfExecutables, Command, Contribution, Deferred,
    ExecutionLifecyclePhase as P, HookContext, HookResult, LifecycleSpec, ModelSpec, Plugin,
    RunHooks,
};
use csis_test_support::{ROOT, load, memory_system, parse, registry, temp_tree, workspace_with};

/// A group builder whose hooks do what its `config:` says:
/// `fail: before|during|after`, `late: true` (defer to verify),
/// `build: <cmd>` (a run-now command of executable `sh`), `user_data:
/// <text>` (a user-data asset of that text, generated during the phase).
struct Probe {
    name: String,
    config: Map,
}

impl Probe {
    fn says(&self, key: &str) -> Option<&str> {
        self.config.get(key).and_then(Value::as_str)
    }
    fn hook(&self, when: &str, phase: P) -> HookResult<AssetSet> {
        if self.says("fail") == Some(when) {
            return Err(vec![csis_model::Diagnostic::error(format!(
                "probe refuses {when}"
            ))]);
        }
        let mut assets = vec![Asset::text(
            format!("{}/{}/{when}.txt", self.name, phase.as_str()),
            format!("{when}\n"),
        )];
        if let (Some(doc), "during") = (self.says("user_data"), when) {
            assets.push(Asset::text(
                format!("{}/{}/user-data", self.name, phase.as_str()),
                doc,
            ));
        }
        Ok(assets)
    }
}

impl Builder for Probe {
    fn generate_items_before(&self, phase: P, _: &dyn HookContext) -> HookResult<AssetSet> {
        self.hook("before", phase)
    }
    fn generate_items_during(&self, phase: P, _: &dyn HookContext) -> HookResult<AssetSet> {
        self.hook("during", phase)
    }
    fn generate_items_after(&self, phase: P, _: &dyn HookContext) -> HookResult<AssetSet> {
        self.hook("after", phase)
    }
    fn get_commands_to_run_during(&self, _: P, _: &dyn HookContext) -> HookResult<CfExecutables> {
        let mut c = CfExecutables::deferred(
            if self.says("late").is_some() {
                P::Verify
            } else {
                P::Execution
            },
            Command::executable("sh", ["-c", "echo probe"]).in_dir(self.name.as_str()),
        );
        if let Some(cmd) = self.says("build") {
            c.build_executables
                .push(Command::executable("sh", ["-c", cmd]));
        }
        Ok(c)
    }
}

fn no_extra(_: &mut Fields<'_>) -> Map {
    Map::default()
}

fn probe(decl: &Arc<BuilderDecl>) -> Box<dyn Builder> {
    Box::new(Probe {
        name: decl.name().to_string(),
        config: decl.base.common().config.clone(),
    })
}

struct ProbeHooks;

impl RunHooks for ProbeHooks {
    fn name(&self) -> &'static str {
        "probe-hooks"
    }
    fn validators(&self, ctx: &dyn HookContext) -> Vec<String> {
        match ctx.config().get("refuse").and_then(Value::as_str) {
            Some(why) => vec![format!("probe: {why}")],
            None => Vec::new(),
        }
    }
    fn after_generate(&self, ctx: &dyn HookContext) -> HookResult<Contribution> {
        if ctx.lifecycle() != "audit" {
            return Ok(Contribution::default());
        }
        Ok(Contribution {
            assets: vec![Asset::text("audit.txt", "audited\n")],
            deferred: vec![Deferred::new(
                P::PostExecution,
                Command::csis(["audit", "--report", "audit.txt"]),
            )],
        })
    }
    fn on_summary(&self, _: &str) -> Result<(), String> {
        Err("notifier unreachable".into())
    }
    fn lifecycles(&self) -> Vec<LifecycleSpec> {
        vec![LifecycleSpec {
            name: "audit",
            aliases: &[],
            phases: Vec::new(),
            after: Some("storage"),
            description: "a plugin's lifecycle",
        }]
    }
}

struct ProbePlugin;

impl Plugin for ProbePlugin {
    fn name(&self) -> &'static str {
        "probe"
    }
    fn models(&self) -> Vec<ModelSpec> {
        vec![ModelSpec {
            name: "probe",
            aliases: &[],
            classification: Vct::GroupBuilderModel,
            base: BaseModelKind::Group,
            read_extra: no_extra,
            builder: probe,
        }]
    }
    fn run_hooks(&self) -> Option<&dyn RunHooks> {
        Some(&ProbeHooks)
    }
}

fn tree(probe_config: &str, config: &str) -> String {
    format!(
        r#"
--- cfg/_config.yml
id: gen
config: {config}
executables:
  - name: sh
    binary: /bin/sh
runtime_builders:
  - {{name: here, type: local, is_default: true, default_machine_type: small}}
group_builders:
  - {{name: b-probe, type: probe, is_default: true, config: {probe_config}}}
  - {{name: a-basic, type: basic}}
user_builders:
  - {{name: people, type: basic, is_default: true, email_as_username: false}}
--- groups/g.yml
users:
  - {{name: avery.alpha, first_name: Avery, last_name: Alpha}}
groups:
  - {{name: ops, is_root: true, members: [avery.alpha]}}
"#
    )
}

struct Outcome {
    summary: RunSummary,
    log: Vec<String>,
    sys: MemorySystem,
}

const PLUGINS: &[&dyn Plugin] = &[&csis_plugin_local::LocalPlugin, &ProbePlugin];

/// A dry run of `lifecycles` that records itself and runs the run-now
/// commands.
fn request(lifecycles: &[&str]) -> RunRequest {
    RunRequest {
        shard: None,
        lifecycles: lifecycles.iter().map(|s| s.to_string()).collect(),
        options: RunOptions {
            dry_run: true,
            ..RunOptions::default()
        },
        no_apply: false,
        csis: PathBuf::from("csis"),
        commit: false,
        record: true,
        stats: false,
        no_state_query: true,
        jobs: 0,
        fail_fast: false,
        lock_token: None,
        carried_env: Vec::new(),
        explain: false,
    }
}

fn run_tree(fixture: &str, lifecycles: &[&str]) -> Outcome {
    let ws = workspace_with(fixture, PLUGINS, &[], &LoadOptions::default());
    let sys = memory_system(Path::new(ROOT), &parse(fixture));
    // The tree's `sh` executable, for the executables check.
    sys.write(Path::new("/bin/sh"), "");
    let req = request(lifecycles);
    let mut log = Vec::new();
    let summary = run(&ws, &sys, &req, &mut |level: Level, line: String| {
        let prefix = match level {
            Level::Info => "",
            Level::Warn => "warning: ",
            Level::Error => "error: ",
        };
        log.push(format!("{prefix}{line}"));
    });
    Outcome { summary, log, sys }
}

fn gen_file(o: &Outcome, rel: &str) -> String {
    o.sys.read(&Path::new(ROOT).join("generated").join(rel))
}

#[test]
fn hooks_fire_in_order_and_the_runner_script_reads_as_shell() {
    let o = run_tree(&tree("{}", "{}"), &["identity"]);
    assert!(o.summary.ok, "{:?}", o.log);
    // before and after for every builder, during for the phase's class.
    assert_eq!(
        gen_file(&o, "identity/b-probe/user-generation/before.txt"),
        "before\n"
    );
    assert_eq!(
        gen_file(&o, "identity/b-probe/user-generation/after.txt"),
        "after\n"
    );
    assert_eq!(
        gen_file(&o, "identity/b-probe/user-generation/during.txt"),
        ""
    );
    assert_eq!(
        gen_file(&o, "identity/b-probe/group-generation/during.txt"),
        "during\n"
    );
    let script = gen_file(&o, "identity/run-identity.sh");
    assert!(
        script.contains("cd \"$CSIS_ROOT\"/generated/identity\n"),
        "{script}"
    );
    assert!(
        script.ends_with(
            "\n# phase: execution\n\"$CSIS\" local identity --spec people/user-generation/people-user-generation-users.json\n(cd b-probe && /bin/sh -c 'echo probe')\n"
        ),
        "{script}"
    );
    assert!(
        o.log.contains(
            &"[DRY RUN] identity/execution: would execute (cd b-probe && /bin/sh -c 'echo probe')"
                .to_string()
        ),
        "{:?}",
        o.log
    );
    assert_eq!(o.summary.apply["identity"], "dry-run");
}

#[test]
fn a_failing_hook_fails_its_lifecycle_with_the_phase_named() {
    for (when, label) in [
        ("before", "before-phase hooks"),
        ("during", "generation"),
        ("after", "after-phase hooks"),
    ] {
        let o = run_tree(&tree(&format!("{{fail: {when}}}"), "{}"), &["identity"]);
        assert!(!o.summary.ok);
        let phase = if when == "during" {
            "group-generation"
        } else {
            "user-generation"
        };
        let want = format!("[identity] {label} failed for {phase}: b-probe: probe refuses {when}");
        assert_eq!(
            o.summary.lifecycles["identity"].error.as_deref(),
            Some(want.as_str())
        );
        assert_eq!(o.summary.lifecycles["identity"].status, "failed");
        assert_eq!(o.summary.apply["identity"], "not-attempted");
        // A failed lifecycle writes nothing.
        assert_eq!(gen_file(&o, "identity/.gitignore"), "");
    }
}

/// The backstop behind validation: every `#cloud-config` asset any builder
/// emits is read back as instance-setup reads it, and what it would refuse
/// fails the lifecycle. The local builder's causes are all refused at
/// validate first, so a plugin whose documents validation does not see is
/// what reaches it.
#[test]
fn generated_user_data_that_would_be_refused_at_boot_fails_the_lifecycle() {
    let probe = |doc: &str| format!("{{user_data: {doc:?}}}");
    let o = run_tree(
        &tree(
            &probe("#cloud-config\nusers:\n  - {name: ops, uid: 65535}\n  - [x]\n"),
            "{}",
        ),
        &["identity"],
    );
    assert!(!o.summary.ok);
    assert_eq!(
        o.summary.lifecycles["identity"].error.as_deref(),
        Some(
            "[identity] b-probe: the generated user-data would be refused at boot: b-probe/group-generation/user-data:3:22: users: account 'ops': uid 65535 is refused (systemd refuses it, and a refused record fails every account in the seed); the account is refused; b-probe/group-generation/user-data:4:5: users: an account must be a mapping, not a list; the entry is refused"
        )
    );
    // A failed lifecycle writes nothing.
    assert_eq!(gen_file(&o, "identity/.gitignore"), "");
    // What is only reported (an unknown key) does not fail it, and a
    // document that is not cloud-config is not read.
    for doc in ["#cloud-config\ncolour: blue\n", "#!/bin/sh\nexit 1\n"] {
        let o = run_tree(&tree(&probe(doc), "{}"), &["identity"]);
        assert!(o.summary.ok, "{doc}: {:?}", o.log);
        assert_eq!(
            gen_file(&o, "identity/b-probe/group-generation/user-data"),
            doc
        );
    }
}

#[test]
fn deferring_past_pre_verify_is_refused() {
    let o = run_tree(&tree("{late: true}", "{}"), &["identity"]);
    assert!(!o.summary.ok);
    assert_eq!(
        o.summary.lifecycles["identity"].error.as_deref(),
        Some("[identity] Extending finalization phase after PRE_VERIFY not allowed (verify)")
    );
}

#[test]
fn a_validator_refusal_stops_the_run() {
    let o = run_tree(&tree("{}", "{refuse: not today}"), &["identity"]);
    assert!(!o.summary.ok);
    assert_eq!(o.summary.validation_errors, ["probe: not today"]);
    assert!(
        o.log
            .contains(&"error: validation: probe: not today".to_string())
    );
    assert!(o.summary.lifecycles.is_empty());
}

#[test]
fn a_plugin_lifecycle_runs_in_its_place_and_its_hook_contributes() {
    let o = run_tree(&tree("{}", "{}"), &["all"]);
    assert!(o.summary.ok, "{:?}", o.log);
    let order: Vec<&String> = o.summary.lifecycles.keys().collect();
    assert_eq!(
        order,
        [
            "identity",
            "storage",
            "audit",
            "base-image",
            "instance-image",
            "release",
            "retention"
        ]
    );
    assert_eq!(gen_file(&o, "audit/audit.txt"), "audited\n");
    assert!(
        gen_file(&o, "audit/run-audit.sh")
            .ends_with("# phase: post-execution\n\"$CSIS\" audit --report audit.txt\n")
    );
    assert!(gen_file(&o, "final_execution.sh").contains("\"$here/audit/run-audit.sh\""));
}

#[test]
fn an_on_summary_failure_is_a_warning_and_changes_nothing() {
    let o = run_tree(&tree("{}", "{}"), &["storage"]);
    assert!(o.summary.ok);
    assert!(
        o.log.contains(
            &"warning: on-summary hook probe-hooks failed: notifier unreachable".to_string()
        ),
        "{:?}",
        o.log
    );
    let summary = gen_file(&o, "run-summary.json");
    assert!(summary.contains("\"ok\": true"), "{summary}");
    let journal = o.sys.read(&Path::new(ROOT).join("meta-state/runs.yaml"));
    assert!(journal.contains("requested:\n      - storage"), "{journal}");
}

#[test]
fn a_failing_run_now_command_fails_generation_with_its_return_code() {
    let dir = temp_tree(&parse(&tree("{build: \"echo broken >&2; exit 4\"}", "{}")));
    let sys = csis_engine::db::system::OsSystem;
    let ws = load(&sys, registry(PLUGINS), dir.path(), &LoadOptions::default());
    let req = request(&["identity"]);
    let mut log = Vec::new();
    let summary = run(&ws, &sys, &req, &mut |_: Level, l: String| log.push(l));
    assert!(!summary.ok);
    assert_eq!(
        summary.lifecycles["identity"].error.as_deref(),
        Some("[identity] Command failed: /bin/sh -c 'echo broken >&2; exit 4' (Return code: 4)")
    );
    assert!(log.contains(&"[identity] broken".to_string()), "{log:?}");
}
