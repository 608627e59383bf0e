//! The phases builder hooks key on, in execution order.

macro_rules! phases {
    ($($variant:ident => $value:literal,)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ExecutionLifecyclePhase { $($variant,)* }

        impl ExecutionLifecyclePhase {
            /// Every phase in execution order.
            pub const ALL: &'static [ExecutionLifecyclePhase] =
                &[$(ExecutionLifecyclePhase::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self { $(ExecutionLifecyclePhase::$variant => $value,)* }
            }
        }
    };
}

phases! {
    Validation => "validation",
    PostValidation => "post-validation",
    PreResolution => "pre-resolution",
    Resolve => "resolve",
    PostResolution => "post-resolution",
    PreUserGeneration => "pre-user-generation",
    UserGeneration => "user-generation",
    PostUserGeneration => "post-user-generation",
    PreGroupGeneration => "pre-group-generation",
    GroupGeneration => "group-generation",
    PostGroupGeneration => "post-group-generation",
    PreStorageGeneration => "pre-storage-generation",
    StorageGeneration => "storage-generation",
    PostStorageGeneration => "post-storage-generation",
    PreImageGeneration => "pre-image-generation",
    ImageGeneration => "image-generation",
    PostImageGeneration => "post-image-generation",
    PreInstanceGeneration => "pre-instance-generation",
    InstanceGeneration => "instance-generation",
    PostInstanceGeneration => "post-instance-generation",
    PreTest => "pre-test",
    Test => "test",
    PostTest => "post-test",
    PreCommit => "pre-commit",
    Commit => "commit",
    PostCommit => "post-commit",
    PreExecution => "pre-execution",
    Execution => "execution",
    PostExecution => "post-execution",
    PreVerify => "pre-verify",
    Finalization => "finalization",
    Verify => "verify",
    PostVerify => "post-verify",
    PreCleanup => "pre-cleanup",
    Cleanup => "cleanup",
    PostCleanup => "post-cleanup",
}

impl ExecutionLifecyclePhase {
    /// Deferred commands may not be added to a phase after pre-verify.
    pub fn accepts_deferred(self) -> bool {
        self <= ExecutionLifecyclePhase::PreVerify
    }
}

#[cfg(test)]
mod tests {
    use super::ExecutionLifecyclePhase as P;

    #[test]
    fn phases_are_ordered_as_the_spec_lists_them() {
        assert_eq!(P::ALL.len(), 36);
        assert!(P::Validation < P::Resolve);
        assert!(P::PostInstanceGeneration < P::PreTest);
        assert!(P::PreVerify.accepts_deferred());
        assert!(!P::Finalization.accepts_deferred());
    }
}
