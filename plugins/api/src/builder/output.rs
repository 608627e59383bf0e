//! What a builder's generation hooks return: generated files ([`Asset`]),
//! the commands to run now or defer to the runner script
//! ([`CfExecutables`]), an emission unit's share of both ([`Emitted`]),
//! and the refusals ([`HookResult`]). Plain values: nothing here reads the
//! run or writes a file.

use csis_model::Diagnostic;

use crate::phase::ExecutionLifecyclePhase;

/// One generated file: a path relative to the lifecycle's directory
/// (generated/<lifecycle>/) and its content. The runner writes assets.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Asset {
    pub path: String,
    pub content: Vec<u8>,
}

impl Asset {
    pub fn text(path: impl Into<String>, content: impl Into<String>) -> Asset {
        Asset {
            path: path.into(),
            content: content.into().into_bytes(),
        }
    }
}

pub type AssetSet = Vec<Asset>;

/// What a command runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Program {
    /// An entry under `executables:` by name: its binary, with its
    /// prepended and appended arguments around the command's own.
    Executable(String),
    /// The system's own CLI (`"$CSIS"` in a runner script): deferred steps
    /// such as `csis local bake`.
    Csis,
}

/// A command line with a working directory relative to the lifecycle
/// directory.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Command {
    pub program: Program,
    pub args: Vec<String>,
    pub working_directory: Option<String>,
}

impl Command {
    pub fn csis<I, S>(args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Command {
            program: Program::Csis,
            args: args.into_iter().map(Into::into).collect(),
            working_directory: None,
        }
    }

    /// `csis lineage record --manifest <manifest>`: the step after a bake
    /// that records its build from the bake's manifest.
    pub fn lineage_record(manifest: &str) -> Command {
        Command::csis([
            "--root-dir",
            "${CSIS_ROOT}",
            "lineage",
            "record",
            "--manifest",
            manifest,
        ])
    }

    /// The manifest a [`Command::lineage_record`] step records, or `None`
    /// for any other command: a run that bakes without recording (a CI
    /// shard) keeps that file instead of running the step.
    pub fn recorded_manifest(&self) -> Option<&str> {
        match (&self.program, self.args.as_slice()) {
            (Program::Csis, [.., lineage, record, flag, manifest])
                if lineage == "lineage" && record == "record" && flag == "--manifest" =>
            {
                Some(manifest)
            }
            _ => None,
        }
    }

    pub fn executable<I, S>(name: &str, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Command {
            program: Program::Executable(name.to_string()),
            args: args.into_iter().map(Into::into).collect(),
            working_directory: None,
        }
    }

    pub fn in_dir(mut self, dir: impl Into<String>) -> Command {
        self.working_directory = Some(dir.into());
        self
    }
}

/// A command deferred to finalization, in the phase it runs in.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Deferred {
    pub phase: ExecutionLifecyclePhase,
    pub command: Command,
    /// The bake the command is a step of, if any.
    pub bake: Option<BakeStep>,
}

impl Deferred {
    /// A command that is no bake's step: it runs in its place in the
    /// phase's order.
    pub fn new(phase: ExecutionLifecyclePhase, command: Command) -> Deferred {
        Deferred {
            phase,
            command,
            bake: None,
        }
    }
}

/// The bake a deferred command is a step of. A real run executes the
/// bakes of a phase as a graph: each bake's steps in order, a bake as soon
/// as the bakes it comes `after` are done, several at once; a command
/// that is no bake's step waits for the bakes before it and holds back
/// those after it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BakeStep {
    /// `<series>@<runtime>`.
    pub key: String,
    /// The bakes of this lifecycle it starts after: its parent's, when the
    /// parent bakes in the run and the child starts from the parent's
    /// newest build.
    pub after: Vec<String>,
    /// Whether the bake runs on this machine (the local runtime), bound by
    /// its cores, rather than on a remote machine.
    pub local: bool,
}

impl BakeStep {
    /// The key of `series` baked on `runtime`.
    pub fn key(series: &str, runtime: &str) -> String {
        format!("{series}@{runtime}")
    }
}

/// Commands a hook asks for: run now during generation
/// (`build_executables`: formatters, validators), or deferred to
/// finalization and rendered into the runner script.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CfExecutables {
    pub build_executables: Vec<Command>,
    pub finalize_executables: Vec<Deferred>,
}

impl CfExecutables {
    pub fn deferred(phase: ExecutionLifecyclePhase, command: Command) -> CfExecutables {
        CfExecutables {
            build_executables: Vec::new(),
            finalize_executables: vec![Deferred::new(phase, command)],
        }
    }
}

/// What one emission unit generates: its files and its commands
/// ([`Builder::emission_units`](super::Builder::emission_units)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Emitted {
    pub assets: AssetSet,
    pub commands: CfExecutables,
}

/// What a hook returns besides its value: problems to report.
pub type HookResult<T> = Result<T, Vec<Diagnostic>>;

/// The path of a phase's asset: `<builder>/<phase>/<builder>-<phase>
/// [-<discriminator>][<suffix>]`.
pub fn path_for_phase(
    builder: &str,
    phase: ExecutionLifecyclePhase,
    discriminator: Option<&str>,
    suffix: &str,
) -> String {
    let p = phase.as_str();
    match discriminator {
        Some(d) => format!("{builder}/{p}/{builder}-{p}-{d}{suffix}"),
        None => format!("{builder}/{p}/{builder}-{p}{suffix}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_lineage_record_step_names_a_recorded_manifest() {
        let record = Command::lineage_record("web.manifest.json").in_dir("pk/image-generation");
        assert_eq!(record.recorded_manifest(), Some("web.manifest.json"));
        let bake = Command::csis(["local", "bake", "--spec", "web.json"]);
        assert_eq!(bake.recorded_manifest(), None);
        let show = Command::csis(["lineage", "show"]);
        assert_eq!(show.recorded_manifest(), None);
        // The same words to another program are not csis's step.
        let other = Command::executable("echo", ["lineage", "record", "--manifest", "m.json"]);
        assert_eq!(other.recorded_manifest(), None);
    }
}
