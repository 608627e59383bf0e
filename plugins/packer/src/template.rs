//! One Packer template per bake, and the steps that run it.

use std::collections::BTreeMap;
use std::sync::Arc;

use csis_hcl::{Block, Body, Expr};
use csis_model::models::{BaseBuilder, Item, ItemView, OsBuilderModel};
use csis_model::{Diagnostic, ItemKind, Map, Value, Vct};
use csis_plugin_api::builder::base_bake_entries;
use csis_plugin_api::image_tests::{in_bake_assertions, shell_quote};
use csis_plugin_api::{
    Asset, Builder, BuilderDecl, Command, ExecutionLifecyclePhase as P, HookContext, HookResult,
    PackerBake, PackerParent, PackerValue,
};

/// A template and the steps that run it.
#[derive(Debug)]
pub struct Bake {
    pub asset: Asset,
    pub commands: Vec<Command>,
}

fn refuse<T>(msg: String) -> HookResult<T> {
    Err(vec![Diagnostic::error(msg)])
}

/// How a provisioner runs its script: as root, with the variables packer
/// sets.
const EXECUTE_AS_ROOT: &str = "chmod +x {{ .Path }}; sudo env {{ .Vars }} {{ .Path }}";

/// The Packer local the image name and labels read the run id from, in the
/// characters GCE names and labels take.
const RUN_LABEL: &str = "csis_run_label";

fn set(name: &str) -> Option<String> {
    let n = name.trim();
    (!n.is_empty() && n != "default").then(|| n.to_string())
}

/// The runtime an image builder bakes on, and its hooks.
struct Runtime {
    decl: Arc<BuilderDecl>,
    hooks: Box<dyn Builder>,
}

fn runtime_of(ctx: &dyn HookContext, me: &BuilderDecl) -> HookResult<Runtime> {
    let reference = me.base.runtime().unwrap_or("default");
    let Some(decl) = ctx.builder(Vct::RuntimeBuilderModel, reference) else {
        return refuse(format!(
            "image builder '{}': runtime '{reference}' is not declared",
            me.name()
        ));
    };
    let Some(hooks) = ctx.builder_hooks(&decl) else {
        return refuse(format!(
            "image builder '{}': runtime '{}' has no registered model",
            me.name(),
            decl.name()
        ));
    };
    if let Some(problem) = runtime_problem(me, &decl, hooks.as_ref()) {
        return refuse(problem);
    }
    Ok(Runtime { decl, hooks })
}

/// Why image builder `me` cannot bake on `runtime`: it has no packer
/// source. Asked at load (`Builder::runtime_problem`) and again at
/// generation.
pub fn runtime_problem(
    me: &BuilderDecl,
    runtime: &BuilderDecl,
    hooks: &dyn Builder,
) -> Option<String> {
    hooks.packer_plugin().is_none().then(|| {
        format!(
            "image builder '{}' bakes with packer, but runtime '{}' (type {}) has no packer source -- point the image builder's runtime at an aws or gce runtime",
            me.name(),
            runtime.name(),
            runtime.model
        )
    })
}

fn names_me(ctx: &dyn HookContext, reference: &str, me: &BuilderDecl) -> bool {
    ctx.builder(Vct::ImageBuilderModel, reference)
        .is_some_and(|b| b.name() == me.name())
}

/// A source block's label: the series with every character that is not a
/// letter, digit, `_` or `-` as `_`.
fn source_name(series: &str) -> String {
    series
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn admin_keys(os: &OsBuilderModel, config: &Map) -> Vec<String> {
    match &os.admin_public_keys {
        Some(keys) => keys.clone(),
        None => match config.get("admin_public_keys") {
            Some(Value::Seq(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            Some(v) => v.as_str().map(str::to_string).into_iter().collect(),
            None => Vec::new(),
        },
    }
}

/// The bake user of an OS builder on a runtime, in the bake-user order
/// from the entry on: the entry's ssh_username, the OS builder's
/// config_username, the runtime's default_config_username, the runtime's
/// default for the family.
fn os_bake_user(os: &OsBuilderModel, entry_user: &str, rt: &Runtime) -> Option<String> {
    set(entry_user)
        .or_else(|| os.config_username.as_deref().and_then(set))
        .or_else(|| {
            rt.decl
                .base
                .runtime_model()
                .and_then(|m| m.default_config_username.as_deref())
                .and_then(set)
        })
        .or_else(|| rt.hooks.default_bake_user(&os.family))
}

/// The OS builder an image's chain starts from.
fn chain_root(ctx: &dyn HookContext, image: &str) -> Option<Arc<BuilderDecl>> {
    let mut at = image.to_string();
    for _ in 0..64 {
        if let Some(os) = ctx.builder(Vct::OsBuilderModel, &at) {
            return Some(os);
        }
        let view = ctx.item(ItemKind::IMAGES, &at)?;
        let Item::Image(img) = view.item.as_ref() else {
            return None;
        };
        at = csis_model::naming::safe_name(img.source_image.as_deref()?);
    }
    None
}

/// The OS builder's entry whose image builder bakes on runtime `rt`.
fn entry_on<'a>(
    ctx: &dyn HookContext,
    os: &'a OsBuilderModel,
    rt: &str,
) -> Option<&'a csis_model::models::OsBuilderBaseImageBuilderSubconfig> {
    os.runtimes.iter().find(|e| {
        ctx.builder(Vct::ImageBuilderModel, &e.image_builder)
            .and_then(|b| b.base.runtime().map(str::to_string))
            .and_then(|r| ctx.builder(Vct::RuntimeBuilderModel, &r))
            .is_some_and(|r| r.name() == rt)
    })
}

fn lineage_tags(
    ctx: &dyn HookContext,
    series: &str,
    runtime: &str,
    parent: &str,
    declared: &[&BTreeMap<String, String>],
) -> Vec<(String, PackerValue)> {
    let mut tags: BTreeMap<String, PackerValue> = BTreeMap::new();
    for m in declared {
        for (k, v) in *m {
            tags.insert(k.clone(), PackerValue::Literal(v.clone()));
        }
    }
    let (ids, sts) = ctx.capabilities(series);
    let fp: String = ctx
        .fingerprint(series, runtime)
        .unwrap_or_default()
        .chars()
        .take(16)
        .collect();
    for (k, v) in [
        ("csis_series", PackerValue::Literal(series.to_string())),
        ("csis_parent", PackerValue::Literal(parent.to_string())),
        ("csis_run", PackerValue::Run),
        ("csis_fingerprint", PackerValue::Literal(fp)),
        ("csis_identity_types", PackerValue::Literal(ids.join(","))),
        ("csis_storage_types", PackerValue::Literal(sts.join(","))),
    ] {
        tags.insert(k.to_string(), v);
    }
    tags.into_iter().collect()
}

/// What one template needs besides the source.
struct Plan {
    bake: PackerBake,
    variables: Vec<(String, Value)>,
    provisioners: Vec<Block>,
    /// The build's parent as custom_data records it.
    parent_record: Expr,
}

fn shell(inline: Vec<String>, env: Vec<Expr>) -> Block {
    let mut b = Block::new("provisioner", ["shell"]).attr("execute_command", EXECUTE_AS_ROOT);
    if !env.is_empty() {
        b = b.attr("environment_vars", Expr::List(env));
    }
    b.attr("inline_shebang", "/bin/bash -e")
        .attr("inline", Expr::strs(inline))
}

/// Base images: the admin user and its keys, as the in-bake assertions
/// expect them.
fn admin_setup(user: &str, keys: &[String]) -> Option<Block> {
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

/// The last provisioners: the runtime's finalize commands, then the
/// in-bake verification.
fn closing(rt: &Runtime, admin_user: &str, keys: &[String], tests: &Map) -> Vec<Block> {
    let mut out = Vec::new();
    let finalize = rt.hooks.bake_finalize_commands();
    if !finalize.is_empty() {
        out.push(shell(finalize, Vec::new()));
    }
    let mut verify = vec!["echo 'csis in-bake verification'".to_string()];
    verify.extend(in_bake_assertions(admin_user, keys, tests));
    out.push(shell(verify, Vec::new()));
    out
}

/// How many directories a template's directory is below the configuration
/// root: generated/<lifecycle>/ (or the private mirror's
/// _private/<lifecycle>/, at the same depth) and the asset's own.
fn up_to_root(asset_path: &str) -> String {
    let depth = 2 + asset_path.matches('/').count();
    "../".repeat(depth)
}

fn value_expr(v: &Value) -> Expr {
    match v {
        Value::Seq(items) => Expr::List(items.iter().map(value_expr).collect()),
        Value::Map(m) => Expr::Object(m.iter().map(|(k, v)| (k.clone(), value_expr(v))).collect()),
        other => match other.as_str() {
            Some(s) => Expr::str(s),
            None => Expr::Null,
        },
    }
}

/// The modifications of an image as provisioners: each bash
/// modification's inline `script` (skipped when every `ensure` command
/// already succeeds), then its `scripts` files, paths relative to the
/// template's directory. Image variables reach them as environment
/// variables, and `CSIS_IMAGE_ROOT` is empty: the image's root is `/`.
fn mod_provisioners(
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
                        .map(|e| format!("( {e} )"))
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

fn is_identifier(s: &str) -> bool {
    csis_hcl::is_identifier(s) && !s.contains('-')
}

/// The image's `variables:` as packer variables (names must be
/// identifiers).
fn image_variables(image: &str, vars: &Map) -> HookResult<Vec<(String, Value)>> {
    let mut out = Vec::new();
    for (k, v) in vars {
        if !is_identifier(k) || k == "csis_run" {
            return refuse(format!(
                "image '{image}': variable '{k}' cannot be a packer variable -- name it with letters, digits and underscores, starting with a letter (csis_run is csis's own)"
            ));
        }
        out.push((k.clone(), v.clone()));
    }
    Ok(out)
}

/// Every bake of this builder in the lifecycle: base images (`base`) from
/// the OS builder entries naming it, else the images it bakes, parents
/// first.
pub fn bakes(ctx: &dyn HookContext, me: &BuilderDecl, base: bool) -> HookResult<Vec<Bake>> {
    let rt = runtime_of(ctx, me)?;
    let runtime = rt.decl.name().to_string();
    let default_machine = |entry: Option<&str>| -> String {
        entry
            .map(str::to_string)
            .or_else(|| match &me.base {
                BaseBuilder::Image(m) => m.default_machine_type.clone(),
                _ => None,
            })
            .or_else(|| {
                rt.decl
                    .base
                    .runtime_model()
                    .map(|m| m.default_machine_type.clone())
            })
            .unwrap_or_default()
    };
    let config = ctx.config();
    let mut plans = Vec::new();
    if base {
        for (os_decl, entry) in base_bake_entries(ctx, me, &runtime) {
            let BaseBuilder::Os(os) = &os_decl.base else {
                continue;
            };
            let series = os_decl.name();
            let mut query: BTreeMap<String, String> = BTreeMap::new();
            for (k, v) in os.query.iter().chain(entry.query.iter()) {
                let Some(s) = v.as_str() else {
                    return refuse(format!(
                        "OS builder '{series}': query '{k}' must be a string to become a vendor image filter"
                    ));
                };
                query.insert(k.clone(), s.to_string());
            }
            let mut owners = os.owners.clone();
            owners.extend(
                rt.decl
                    .base
                    .runtime_model()
                    .and_then(|m| m.default_owners.clone())
                    .unwrap_or_default(),
            );
            owners.extend(entry.owners.clone());
            let Some(user) = os_bake_user(os, &entry.ssh_username, &rt) else {
                return refuse(format!(
                    "OS builder '{series}' on runtime '{runtime}': no bake user -- set ssh_username on the entry, config_username on the OS builder, or default_config_username on the runtime"
                ));
            };
            let keys = admin_keys(os, &config);
            let tests = entry.tests.clone().unwrap_or_else(|| os.tests.clone());
            let mut provisioners: Vec<Block> =
                admin_setup(&os.admin_user, &keys).into_iter().collect();
            provisioners.extend(closing(&rt, &os.admin_user, &keys, &tests));
            let tags = lineage_tags(
                ctx,
                series,
                &runtime,
                "vendor",
                &[&os.builder.tags, &entry.tags],
            );
            plans.push(Plan {
                bake: PackerBake {
                    series: series.to_string(),
                    source_name: source_name(series),
                    parent: PackerParent::Vendor {
                        image_id: entry.image_id.clone(),
                        query,
                        owners,
                    },
                    family: os.family.clone(),
                    machine_type: default_machine(entry.default_machine_type.as_deref()),
                    disk_size: ctx
                        .bake_disk_size(series, &runtime)
                        .and_then(|s| s.trim().parse().ok()),
                    ssh_username: user,
                    tags,
                },
                variables: Vec::new(),
                provisioners,
                parent_record: Expr::str("vendor"),
            });
        }
    } else {
        for name in ctx.images_in_bake_order() {
            let Some(view) = ctx.item(ItemKind::IMAGES, &name) else {
                continue;
            };
            let Item::Image(img) = view.item.as_ref() else {
                continue;
            };
            let Some(entry) = img
                .runtimes
                .iter()
                .find(|e| names_me(ctx, &e.image_builder, me))
            else {
                continue;
            };
            if !ctx.bake_decision(&name, &runtime).bake {
                continue;
            }
            let Some(root_decl) = chain_root(ctx, &name) else {
                return refuse(format!("image '{name}': its chain reaches no OS builder"));
            };
            let BaseBuilder::Os(root) = &root_decl.base else {
                continue;
            };
            let root_user = entry_on(ctx, root, &runtime)
                .and_then(|e| os_bake_user(root, &e.ssh_username, &rt))
                .or_else(|| os_bake_user(root, "default", &rt));
            let user = if rt.hooks.one_bake_user_per_chain() {
                root_user
            } else {
                set(&entry.ssh_username).or(root_user)
            };
            let Some(user) = user else {
                return refuse(format!(
                    "image '{name}' on runtime '{runtime}': no bake user -- set ssh_username on the image's runtimes entry or on its chain root's OS builder entry"
                ));
            };
            let parent = img
                .source_image
                .as_deref()
                .map(csis_model::naming::safe_name)
                .unwrap_or_default();
            let (packer_parent, parent_record, parent_tag) =
                match ctx.pinned_parent(&name, &runtime) {
                    Some(build) => (
                        PackerParent::Build(build.clone()),
                        Expr::str(build.as_str()),
                        build,
                    ),
                    None => {
                        let record = match rt.hooks.packer_parent_expression() {
                            Some(e) => Expr::template(e),
                            None => Expr::str(format!("series:{parent}")),
                        };
                        (
                            PackerParent::Series(parent.clone()),
                            record,
                            format!("series:{parent}"),
                        )
                    }
                };
            let variables = image_variables(&name, &img.variables)?;
            let asset_path = template_path(me.name(), &name);
            let mut provisioners =
                mod_provisioners(ctx, &name, &view, &up_to_root(&asset_path), &variables)?;
            let keys = admin_keys(root, &config);
            provisioners.extend(closing(&rt, &root.admin_user, &keys, &img.tests));
            let tags = lineage_tags(
                ctx,
                &name,
                &runtime,
                &parent_tag,
                &[&img.root.tags, &entry.tags],
            );
            plans.push(Plan {
                bake: PackerBake {
                    series: name.clone(),
                    source_name: source_name(&name),
                    parent: packer_parent,
                    family: root.family.clone(),
                    machine_type: default_machine(entry.machine_type.as_deref()),
                    disk_size: ctx
                        .bake_disk_size(&name, &runtime)
                        .and_then(|s| s.trim().parse().ok()),
                    ssh_username: user,
                    tags,
                },
                variables,
                provisioners,
                parent_record,
            });
        }
    }
    plans.into_iter().map(|p| render(ctx, me, &rt, p)).collect()
}

fn template_path(builder: &str, series: &str) -> String {
    format!("{builder}/{}/{series}.pkr.hcl", P::ImageGeneration.as_str())
}

/// The template of one bake and its three steps.
fn render(ctx: &dyn HookContext, me: &BuilderDecl, rt: &Runtime, plan: Plan) -> HookResult<Bake> {
    let Plan {
        bake,
        variables,
        provisioners,
        parent_record,
    } = plan;
    let series = bake.series.clone();
    let runtime = rt.decl.name();
    let Some(source) = rt.hooks.packer_source(&bake)? else {
        return refuse(format!("runtime '{runtime}' has no packer source"));
    };
    let Some(plugin) = rt.hooks.packer_plugin() else {
        return refuse(format!("runtime '{runtime}' has no packer plugin"));
    };
    let version = me
        .extra
        .get("required_plugins")
        .and_then(|m| m.get(plugin.name))
        .and_then(Value::as_str)
        .unwrap_or(plugin.version);
    let mut body = Body::new()
        .comment(&format!(
            "csis: bake of {series} on runtime {runtime} (image builder {}). Generated; edit the configuration instead.",
            me.name()
        ))
        .block(Block::new("packer", Vec::<String>::new()).block(
            Block::new("required_plugins", Vec::<String>::new()).attr(
                plugin.name,
                Expr::Object(vec![
                    ("source".into(), Expr::str(plugin.source)),
                    ("version".into(), Expr::str(version)),
                ]),
            ),
        ))
        .block(
            Block::new("variable", ["csis_run"])
                .attr("type", Expr::raw("string"))
                .attr(
                    "description",
                    "The csis run this build belongs to (the runner passes $CSIS_RUN_ID).",
                ),
        );
    for (k, v) in &variables {
        body = body.block(Block::new("variable", [k.as_str()]).attr("default", value_expr(v)));
    }
    body = body
        .block(Block::new("locals", Vec::<String>::new()).attr(
            RUN_LABEL,
            Expr::Call(
                "lower".into(),
                vec![Expr::Call(
                    "replace".into(),
                    vec![Expr::raw("var.csis_run"), Expr::str("_"), Expr::str("-")],
                )],
            ),
        ))
        .block(source.clone());
    let source_ref = format!(
        "source.{}.{}",
        source.labels.first().cloned().unwrap_or_default(),
        bake.source_name
    );
    let (ids, sts) = ctx.capabilities(&series);
    let manifest = manifest_name(&series);
    let custom = Expr::Object(vec![
        ("series".into(), Expr::str(series.as_str())),
        ("runtime".into(), Expr::str(runtime)),
        (
            "fingerprint".into(),
            Expr::str(ctx.fingerprint(&series, runtime).unwrap_or_default()),
        ),
        ("parent".into(), parent_record),
        ("run".into(), Expr::raw("var.csis_run")),
        ("identity_types".into(), Expr::str(ids.join(","))),
        ("storage_types".into(), Expr::str(sts.join(","))),
    ]);
    let build = Block::new("build", Vec::<String>::new())
        .attr("name", bake.source_name.as_str())
        .attr("sources", Expr::strs([source_ref]))
        .blocks(provisioners)
        .block(
            Block::new("post-processor", ["manifest"])
                .attr("output", manifest.as_str())
                .attr("strip_path", true)
                .attr("custom_data", custom),
        );
    body = body.block(build);
    let path = template_path(me.name(), &series);
    let dir = path
        .rsplit_once('/')
        .map(|(d, _)| d.to_string())
        .unwrap_or_default();
    let file = format!("{series}.pkr.hcl");
    let packer = me
        .base
        .common()
        .executable
        .clone()
        .unwrap_or_else(|| "packer".to_string());
    let commands = vec![
        Command::executable(&packer, ["init", file.as_str()]).in_dir(dir.as_str()),
        Command::executable(
            &packer,
            [
                "build",
                "-machine-readable",
                "-var",
                "csis_run=${CSIS_RUN_ID}",
                file.as_str(),
            ],
        )
        .in_dir(dir.as_str()),
        Command::lineage_record(&manifest).in_dir(dir.as_str()),
    ];
    Ok(Bake {
        asset: Asset::text(path, body.render()),
        commands,
    })
}

/// The manifest post-processor's output beside the template.
pub fn manifest_name(series: &str) -> String {
    format!("{series}.manifest.json")
}
