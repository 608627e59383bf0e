//! One bake's Packer template as a document (the required plugin, the
//! variables, the run label, the runtime's source block, the build with
//! its provisioners and manifest post-processor), where it is written,
//! and the three steps that run it: init, build, record.

use csis_hcl::{Block, Body, Expr};
use csis_model::Value;
use csis_plugin_api::{
    Asset, BakeStep, BuilderDecl, Command, ExecutionLifecyclePhase as P, HookContext, HookResult,
};

use super::plans::Plan;
use super::runtime::Runtime;
use super::{Bake, refuse};

/// The Packer local the image name and labels read the run id from, in the
/// characters GCE names and labels take.
const RUN_LABEL: &str = "csis_run_label";

/// How many directories a template's directory is below the configuration
/// root: generated/<lifecycle>/ (or the private mirror's
/// _private/<lifecycle>/, at the same depth) and the asset's own.
pub(super) fn up_to_root(asset_path: &str) -> String {
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
pub(super) fn template_path(builder: &str, series: &str) -> String {
    format!("{builder}/{}/{series}.pkr.hcl", P::ImageGeneration.as_str())
}

/// The template of one bake and its three steps.
pub(super) fn render(
    ctx: &dyn HookContext,
    me: &BuilderDecl,
    rt: &Runtime,
    plan: Plan,
) -> HookResult<Bake> {
    let Plan {
        bake,
        variables,
        provisioners,
        parent_record,
        in_bake_checks,
        after,
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
        // 1.7.8: the first Packer whose manifest post-processor renders
        // `${build.SourceAMI}`, which the bake's manifest records its
        // parent by (hashicorp/packer#11323, #11411).
        .block(Block::new("packer", Vec::<String>::new()).attr("required_version", ">= 1.7.8").block(
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
        // A JSON list in one string: custom_data holds strings only.
        (
            "in_bake_checks".into(),
            Expr::str(serde_json::to_string(&in_bake_checks).unwrap_or_default()),
        ),
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
        step: BakeStep {
            key: BakeStep::key(&series, runtime),
            after,
            local: false,
        },
    })
}

/// The manifest post-processor's output beside the template.
pub fn manifest_name(series: &str) -> String {
    format!("{series}.manifest.json")
}
