//! The checks at validate and at the head of every run that need no
//! provider's live answer, in the order they run: each item's own checks
//! (foreign keys, policies, test specs, canonical hostnames), the
//! builders' (runtime policies, base images), the strict attach rule, the
//! storages' transitions and cardinality with the unique global ids, the
//! capabilities, the alias pool, managed groups, user-data, the
//! immutability of launched instances, label keys, the cloud resource
//! names runtimes derive, availability zones,
//! identity items, users' logins, bake users. Each family is in a file of
//! its own; this one only lists them. Each refusal is a diagnostic with
//! the spec's wording, placed where the offending value is.

use csis_model::Diagnostic;

use crate::check::capabilities::capability_report;
use crate::check::context::Checks;
use crate::check::item_checks::{ItemCheck, each_item};
use crate::db::{Db, Tree};

/// Every validate-time refusal, in a stable order.
///
/// The per-item checks run in one query per item file (`item_checks`),
/// so that an edit re-runs the checks of that file's items only; this
/// query concatenates.
#[salsa::tracked(returns(ref))]
pub fn validation_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let mut out = each_item(db, tree, ItemCheck::Own);
    out.extend(builder_diagnostics(db, tree).iter().cloned());
    out.extend(each_item(db, tree, ItemCheck::Attach));
    out.extend(storage_diagnostics(db, tree).iter().cloned());
    out.extend(capability_report(db, tree));
    out.extend(
        crate::check::aliases::alias_pool_diagnostics(db, tree)
            .iter()
            .cloned(),
    );
    out.extend(crate::check::groups::managed_groups_missing(db, tree));
    out.extend(each_item(db, tree, ItemCheck::UserData));
    out.extend(crate::check::launch_params::immutability_diagnostics(
        db, tree,
    ));
    out.extend(each_item(db, tree, ItemCheck::LabelKeys));
    out.extend(crate::check::cloud_names::cloud_name_diagnostics(db, tree));
    out.extend(each_item(db, tree, ItemCheck::Zones));
    out.extend(each_item(db, tree, ItemCheck::IdentityItem));
    out.extend(
        crate::check::logins::login_diagnostics(db, tree)
            .iter()
            .cloned(),
    );
    out.extend(crate::check::bake_users::os_builder_bake_users(db, tree));
    out.extend(each_item(db, tree, ItemCheck::BakeUsers));
    out.extend(crate::check::templates::template_diagnostics(db, tree));
    out
}

/// Runtime policies, OS builders' update policies and base images.
#[salsa::tracked(returns(ref))]
fn builder_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let mut v = Checks::new(db, tree);
    v.runtime_policies();
    v.base_images();
    v.out
}

/// The storage state machine's transitions and single-attach cardinality,
/// then the unique global ids.
#[salsa::tracked(returns(ref))]
pub(crate) fn storage_diagnostics(db: &dyn Db, tree: Tree) -> Vec<Diagnostic> {
    let mut v = Checks::new(db, tree);
    v.cardinality();
    v.out
        .extend(crate::check::global_ids::global_id_diagnostics(db, tree));
    v.out
}
