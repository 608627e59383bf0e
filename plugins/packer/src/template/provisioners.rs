//! A bake's shell provisioners, all run as root: a base image's admin
//! user and keys and its first-boot unit, each bash modification of an
//! image, and the closing ones (the runtime's finalize commands, then the
//! in-bake verification).

use csis_hcl::{Block, Expr};
use csis_model::models::ItemView;
use csis_model::{Map, Value};
use csis_plugin_api::first_boot;
use csis_plugin_api::image_tests::{in_bake_checks, shell_quote};
use csis_plugin_api::{HookContext, HookResult};

use super::runtime::Runtime;

/// How a provisioner runs its script: as root, with the variables packer
/// sets.
const EXECUTE_AS_ROOT: &str = "chmod +x {{ .Path }}; sudo env {{ .Vars }} {{ .Path }}";

fn shell(inline: Vec<String>, env: Vec<Expr>) -> Block {
    let mut b = Block::new("provisioner", ["shell"]).attr("execute_command", EXECUTE_AS_ROOT);
    if !env.is_empty() {
        b = b.attr("environment_vars", Expr::List(env));
    }
    b.attr("inline_shebang", "/bin/bash -e")
        .attr("inline", Expr::strs(inline))
}

/// Base images: what the runtime's machines need that the vendor image
/// lacks (its session agent, the boot tooling that reads user-data),
/// first, so the admin setup and the modifications run on a machine that
/// has it.
pub(super) fn runtime_prerequisites(rt: &Runtime) -> Option<Block> {
    let lines = rt.hooks.base_bake_commands();
    (!lines.is_empty()).then(|| shell(lines, Vec::new()))
}

/// Base images: the admin user and its keys, as the in-bake assertions
/// expect them.
pub(super) fn admin_setup(user: &str, keys: &[String]) -> Option<Block> {
    let u = user.trim();
    if u.is_empty() {
        return None;
    }
    let q = shell_quote(u);
    let keys: Vec<String> = keys.iter().map(|k| shell_quote(k.trim())).collect();
    let mut lines = vec![
        format!(
            "if ! id -u {q} >/dev/null 2>&1; then useradd --create-home --shell /bin/bash {q}; fi"
        ),
        format!("home=\"$(getent passwd {q} | cut -d: -f6)\""),
        format!("install -d -m 0700 -o {q} -g \"$(id -gn {q})\" \"$home/.ssh\""),
    ];
    if keys.is_empty() {
        lines.push("touch \"$home/.ssh/authorized_keys\"".into());
    } else {
        lines.push(format!(
            "printf '%s\\n' {} > \"$home/.ssh/authorized_keys\"",
            keys.join(" ")
        ));
    }
    lines.extend([
        format!("chown {q}:\"$(id -gn {q})\" \"$home/.ssh/authorized_keys\""),
        "chmod 0600 \"$home/.ssh/authorized_keys\"".to_string(),
        format!(
            "printf '%s\\n' {} > /etc/sudoers.d/90-csis-admin",
            shell_quote(&format!("{u} ALL=(ALL) NOPASSWD:ALL"))
        ),
        "chmod 0440 /etc/sudoers.d/90-csis-admin".to_string(),
    ]);
    Some(shell(lines, Vec::new()))
}

/// Base images: the dormant first-boot unit that runs the instance's
/// launch script (its user-data only writes it: instance-setup runs no
/// script, spec 004). Installed once, in the base: every image over it
/// inherits the unit with the rest of the parent's disk. `CSIS_IMAGE_ROOT`
/// is empty, as for the modifications: the image's root is `/`.
pub(super) fn first_boot_install() -> Block {
    shell(
        first_boot::install_lines(),
        vec![Expr::str("CSIS_IMAGE_ROOT=")],
    )
}

/// The last provisioners: the runtime's finalize commands, then the
/// in-bake verification; and what that verification checks, in order,
/// for the build's record (custom_data `in_bake_checks`).
pub(super) fn closing(
    rt: &Runtime,
    admin_user: &str,
    keys: &[String],
    tests: &Map,
) -> (Vec<Block>, Vec<String>) {
    let mut out = Vec::new();
    let finalize = rt.hooks.bake_finalize_commands();
    if !finalize.is_empty() {
        out.push(shell(finalize, Vec::new()));
    }
    let checks = in_bake_checks(admin_user, keys, tests);
    let mut what: Vec<String> = checks.iter().map(|c| c.what.clone()).collect();
    let mut verify = vec!["echo 'csis in-bake verification'".to_string()];
    verify.extend(checks.into_iter().map(|c| c.line));
    // Here rather than in the shared in_bake_assertions: every packer
    // bake descends from a base that installed the unit
    // ([`first_boot_install`]), so every one (a child too: a parent's
    // unit must survive its modifications) can assert it, whereas the
    // other runtimes install the unit by their own means and decide
    // their own verification.
    verify.push(first_boot::installed_assertion());
    what.push(first_boot::INSTALLED_CHECK.to_string());
    out.push(shell(verify, Vec::new()));
    (out, what)
}

/// The modifications of an image as provisioners: each bash
/// modification's inline `script` (skipped when every `ensure` command
/// already succeeds), then its `scripts` files, paths relative to the
/// template's directory. Image variables reach them as environment
/// variables, and `CSIS_IMAGE_ROOT` is empty: the image's root is `/`.
pub(super) fn mod_provisioners(
    ctx: &dyn HookContext,
    image: &str,
    view: &ItemView,
    up: &str,
    variables: &[(String, Value)],
) -> HookResult<Vec<Block>> {
    let mut env = vec![Expr::str("CSIS_IMAGE_ROOT=")];
    env.extend(
        variables
            .iter()
            .map(|(k, _)| Expr::template(format!("{k}=${{var.{k}}}"))),
    );
    let mut out = Vec::new();
    for m in csis_plugin_api::bash_mods::bash_mods(ctx, image, view, "packer")? {
        let (name, ensure) = (&m.name, &m.ensure);
        if let Some(script) = &m.script {
            let mut inline = vec![format!(
                "echo {}",
                shell_quote(&format!("modification {name}"))
            )];
            if !ensure.is_empty() {
                inline.push(format!(
                    "if {}; then echo {}; exit 0; fi",
                    ensure
                        .iter()
                        // The `)` on a line of its own: an entry that
                        // ends in `# comment` would comment it out.
                        .map(|e| format!("( {e}\n)"))
                        .collect::<Vec<_>>()
                        .join(" && "),
                    shell_quote(&format!("modification {name} already applied"))
                ));
            }
            inline.push(script.clone());
            out.push(shell(inline, env.clone()));
        }
        let files = &m.scripts;
        if !files.is_empty() {
            out.push(
                Block::new("provisioner", ["shell"])
                    .attr("execute_command", EXECUTE_AS_ROOT)
                    .attr("environment_vars", Expr::List(env.clone()))
                    .attr(
                        "scripts",
                        Expr::strs(
                            files
                                .iter()
                                .map(|f| format!("{up}{}", f.trim_start_matches("./"))),
                        ),
                    ),
            );
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_boot_install_runs_the_shared_install_lines_as_root_with_an_empty_image_root() {
        let text = csis_hcl::Body::new().block(first_boot_install()).render();
        assert!(text.starts_with("provisioner \"shell\" {\n"), "{text}");
        assert!(
            text.contains(
                "  execute_command  = \"chmod +x {{ .Path }}; sudo env {{ .Vars }} {{ .Path }}\"\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("  environment_vars = [\"CSIS_IMAGE_ROOT=\"]\n"),
            "{text}"
        );
        let expected = format!(
            "  inline           = {}\n",
            csis_hcl::Body::new()
                .attr("x", Expr::strs(first_boot::install_lines()))
                .render()
                .trim_start_matches("x = ")
                .trim_end()
        );
        assert!(text.contains(&expected), "{text}\n{expected}");
        assert!(
            text.contains("\"ln -sf /etc/systemd/system/csis-launch.service \\\"$CSIS_IMAGE_ROOT/etc/systemd/system/multi-user.target.wants/csis-launch.service\\\"\""),
            "{text}"
        );
    }
}
