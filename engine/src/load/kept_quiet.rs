//! Whether the persisted cache kept that a file's checks found nothing:
//! a quiet file of the world (`kept_world.rs`), a users file kept with
//! its checks (`kept_users.rs`), an instances file kept with its
//! (`kept_instances.rs`). Such a file is neither structured by the
//! warm-up nor checked.

use csis_model::ItemKind;

use crate::db::{Db, SourceFile};
use crate::load::{kept_instances, kept_users, kept_world};

/// Whether `file`'s checks were kept as finding nothing. Answered
/// without a query when there is no cache (a cold plan asks it of every
/// file).
pub fn kept_quiet(db: &dyn Db, file: SourceFile) -> bool {
    db.cache().is_some() && *quiet(db, file)
}

/// A query: the warm-up and the file's checks both ask, and each answer
/// looks the cache up by a path made for it. A users unit is only ever
/// kept for a file under the users' directory, an instances unit for one
/// under the instances' (each holds its kind alone): no other file's is
/// looked for.
#[salsa::tracked]
fn quiet(db: &dyn Db, file: SourceFile) -> bool {
    let dir = file.path(db).split('/').next();
    kept_world::quiet_file(db, file)
        || (dir == Some(ItemKind::USERS.dir()) && kept_users::holds(db, file))
        || (dir == Some(ItemKind::INSTANCES.dir())
            && kept_instances::kept_instances(db, file).is_some())
}
