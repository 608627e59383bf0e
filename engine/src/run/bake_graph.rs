//! The deferred commands of a phase as a real run executes them: a command
//! that is no bake's step runs in its place, in order; a run of
//! consecutive bake steps is one graph of bakes, each bake's steps in
//! order and a bake after the bakes it names (its parent's), several at
//! once (`run/apply_bakes.rs`). The runner script shows the same
//! segments, each bake's lines under a comment naming it.

use std::collections::HashMap;

use csis_plugin_api::{Command, Deferred};
use serde::Serialize;

/// A stretch of one phase's commands.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Segment<'a> {
    /// A command that is no bake's step.
    Single(&'a Command),
    /// Consecutive bake steps, as bakes in the order they first appear.
    Bakes(Vec<Bake<'a>>),
}

/// One bake of a segment.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Bake<'a> {
    /// `<series>@<runtime>`.
    pub key: &'a str,
    /// The bakes of the same segment it starts after, by their place in
    /// it (always before its own: an `after` naming a bake that is not in
    /// the segment is done already, or not baked in this run).
    pub after: Vec<usize>,
    pub local: bool,
    pub commands: Vec<&'a Command>,
}

/// The commands of one phase, in segments.
pub(crate) fn segments<'a>(cmds: &[&'a Deferred]) -> Vec<Segment<'a>> {
    let mut out: Vec<Segment<'a>> = Vec::new();
    // The place of each bake of the last segment, by key.
    let mut places: HashMap<&'a str, usize> = HashMap::new();
    for d in cmds {
        let Some(step) = &d.bake else {
            out.push(Segment::Single(&d.command));
            continue;
        };
        if !matches!(out.last(), Some(Segment::Bakes(_))) {
            out.push(Segment::Bakes(Vec::new()));
            places.clear();
        }
        let Some(Segment::Bakes(bakes)) = out.last_mut() else {
            continue;
        };
        match places.get(step.key.as_str()) {
            Some(&i) => bakes[i].commands.push(&d.command),
            None => {
                let after = step
                    .after
                    .iter()
                    .filter_map(|a| places.get(a.as_str()).copied())
                    .collect();
                places.insert(&step.key, bakes.len());
                bakes.push(Bake {
                    key: &step.key,
                    after,
                    local: step.local,
                    commands: vec![&d.command],
                });
            }
        }
    }
    out
}

/// What became of one bake of a real run, for the run summary and the
/// journal.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BakeRecord {
    pub lifecycle: String,
    /// `<series>@<runtime>`.
    pub bake: String,
    /// `baked`, `failed` or `not-attempted`.
    pub outcome: String,
    /// ISO 8601, UTC; absent for a bake not attempted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    /// Why it failed, or why it was not attempted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use csis_plugin_api::{BakeStep, ExecutionLifecyclePhase as P};

    fn bake(key: &str, after: &[&str], word: &str) -> Deferred {
        Deferred {
            phase: P::Execution,
            command: Command::csis([word]),
            bake: Some(BakeStep {
                key: key.into(),
                after: after.iter().map(|a| a.to_string()).collect(),
                local: false,
            }),
        }
    }

    #[test]
    fn consecutive_bake_steps_are_one_graph_between_the_single_commands() {
        let all = [
            Deferred::new(P::Execution, Command::csis(["first"])),
            bake("base@aws", &["os@aws"], "b1"),
            bake("base@aws", &["os@aws"], "b2"),
            bake("app@aws", &["base@aws"], "a1"),
            bake("base@gce", &[], "g1"),
            Deferred::new(P::Execution, Command::csis(["between"])),
            bake("web@aws", &["app@aws"], "w1"),
        ];
        let refs: Vec<&Deferred> = all.iter().collect();
        let s = segments(&refs);
        assert_eq!(s.len(), 4, "{s:?}");
        assert_eq!(s[0], Segment::Single(&all[0].command));
        let Segment::Bakes(bakes) = &s[1] else {
            panic!("{s:?}")
        };
        let keys: Vec<(&str, Vec<&str>, usize)> = bakes
            .iter()
            .map(|b| {
                let after = b.after.iter().map(|&j| bakes[j].key).collect();
                (b.key, after, b.commands.len())
            })
            .collect();
        // os@aws is not baked here: base@aws waits for nothing.
        assert_eq!(
            keys,
            [
                ("base@aws", vec![], 2),
                ("app@aws", vec!["base@aws"], 1),
                ("base@gce", vec![], 1)
            ]
        );
        // A parent in an earlier graph is done before this one starts.
        let Segment::Bakes(last) = &s[3] else {
            panic!("{s:?}")
        };
        assert!(last[0].after.is_empty(), "{last:?}");
    }
}
