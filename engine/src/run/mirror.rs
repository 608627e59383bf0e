//! The private mirror a real apply executes from (secrets opened), and the
//! lock files copied back from it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::db::emit::{sync_dir, write_if_changed};
use crate::run::generate::Emission;
use crate::run::steps::Runner;

impl Runner<'_> {
    /// The private mirror a real run executes from: the lifecycle's
    /// directory at `_private/<lifecycle>/` beside generated/, with every
    /// `ENC[age:...]` marker replaced by its plaintext, kept in step
    /// incrementally. Only `.terraform.lock.hcl` files are ever copied back.
    /// In a git repository `_private/` is appended to the root's .gitignore.
    pub(super) fn materialize(&mut self, name: &str, em: &Emission) -> Result<PathBuf, String> {
        let identities = self.ws.tree.identities(&self.ws.db);
        let mut files = BTreeMap::new();
        for (path, bytes) in &em.files {
            let text = String::from_utf8_lossy(bytes);
            let mut plain = text.to_string();
            for (line, marker) in csis_secrets::markers_in(&text) {
                let opened = csis_secrets::decrypt(&marker, identities)
                    .map_err(|e| format!("[{name}] materialise: {path}:{line}: {e}"))?;
                plain = plain.replacen(&marker, &opened, 1);
            }
            files.insert(
                path.clone(),
                std::sync::Arc::<[u8]>::from(plain.into_bytes()),
            );
        }
        let mirror = self.ws.root.join("_private").join(name);
        // Each mirror is made anew from plaintext: nothing to remember.
        let seen = crate::db::emit::Seen::default();
        sync_dir(
            self.system,
            &mirror,
            &files,
            &em.executables,
            &|_| false,
            &seen,
        )
        .map_err(|e| format!("[{name}] materialise: {e}"))?;
        crate::run::lock::ignore_in_git(self.system, &self.ws.root, "_private/")?;
        Ok(mirror)
    }

    /// After execution: the lock files terraform wrote in the mirror go
    /// back to the generated tree; nothing else does.
    pub(super) fn copy_back_lock_files(
        &self,
        name: &str,
        mirror: &std::path::Path,
    ) -> Result<(), String> {
        for p in self.system.list_files(mirror).map_err(|e| e.to_string())? {
            if p.file_name().is_some_and(|f| f == ".terraform.lock.hcl") {
                let rel = p.strip_prefix(mirror).unwrap_or(&p);
                if let Some(bytes) = self.system.read_bytes(&p).map_err(|e| e.to_string())? {
                    write_if_changed(
                        self.system,
                        &self.gen_dir.join(name).join(rel),
                        &bytes,
                        false,
                    )
                    .map_err(|e| e.to_string())?;
                }
            }
        }
        Ok(())
    }
}
