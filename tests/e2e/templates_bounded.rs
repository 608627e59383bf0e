//! Templates are bounded (docs/reliability.md, "Limits on templates"): a
//! template that calls `debug()`, loops too long or renders too much is
//! refused at its file:line:col with the limit it hit, and the load ends
//! instead of hanging or exhausting memory.

use crate::support::edit;
use csis_test_support::tree;

/// `csis --brief validate` over fixtures/local-run with image `base`'s
/// description set to `template` (a YAML double-quoted scalar) and, with
/// `cfg`, the runtime builder's `default_machine_type` set to it instead.
fn validate_with(template: &str, in_cfg: bool) -> (Option<i32>, String) {
    let t = tree("local-run");
    let quoted = format!("\"{template}\"");
    if in_cfg {
        edit(
            t.path(),
            "cfg/builders.yml",
            "default_machine_type: small",
            &format!("default_machine_type: {quoted}"),
        );
    } else {
        edit(
            t.path(),
            "images/chain.yml",
            "  - name: base\n",
            &format!("  - name: base\n    description: {quoted}\n"),
        );
    }
    crate::support::brief_validate(t.path())
}

#[test]
fn debug_is_refused_as_an_unknown_function() {
    let (code, stderr) = validate_with("{{ debug() }}", false);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "images/chain.yml:3:18: template in field 'description' of image 'base' calls 'debug()', a function configuration templates do not have\n  \
         help: the functions templates have are range(), dict() and namespace(), besides minijinja's filters and tests\n\
         validate: 1 error(s)\n"
    );
}

/// 10^12 iterations: the budget ends it after a million instructions (the
/// test asserts that it completes, not how fast).
#[test]
fn three_nested_loops_run_out_of_their_budget() {
    let loops = "{% for a in range(10000) %}{% for b in range(10000) %}{% for c in range(10000) %}x{% endfor %}{% endfor %}{% endfor %}";
    let (code, stderr) = validate_with(loops, false);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "images/chain.yml:3:18: template in field 'description' of image 'base' ran out of its budget of 1,000,000 instructions (a loop too large?)\n  \
         help: a template may execute at most 1,000,000 instructions; loop over less, or generate the value outside csis\n\
         validate: 1 error(s)\n"
    );
}

#[test]
fn a_huge_output_is_refused() {
    let (code, stderr) = validate_with("{{ 'x' * 50000000 }}", false);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "images/chain.yml:3:18: template in field 'description' of image 'base' rendered more than the 1 MiB a value may hold\n  \
         help: a rendered value may hold at most 1 MiB; keep large content in a file the value names\n\
         validate: 1 error(s)\n"
    );
}

/// cfg/'s string stage is held to the same limits, and names the builder.
#[test]
fn a_cfg_template_is_bounded_too() {
    let (code, stderr) = validate_with("{{ 'x' * 50000000 }}", true);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "cfg/builders.yml:2:71: template in field 'default_machine_type' of runtime builder 'here' rendered more than the 1 MiB a value may hold\n  \
         help: a rendered value may hold at most 1 MiB; keep large content in a file the value names\n\
         validate: 1 error(s)\n"
    );
}

/// A template minijinja's compiler cannot take (found by the fuzz target)
/// is kept as written, with no panic on the way.
#[test]
fn a_template_the_compiler_chokes_on_is_kept_without_a_panic() {
    let (code, stderr) = validate_with("{% import 'x' as yrange(10000) %}", false);
    assert_eq!((code, stderr.as_str()), (Some(0), "validate: ok\n"));
}
