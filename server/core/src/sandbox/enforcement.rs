//! What the sandbox enforces on this machine, found once per session, and the words that
//! say it: one line for the log and a `warning` naming what is not enforced.

use super::{SandboxNetwork, landlock, namespaces};

/// What the OS sandbox enforces for a session's commands on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxEnforcement {
    /// The Landlock ABI applied to commands; 0 when the kernel has no Landlock.
    pub landlock_abi: u32,
    /// The Landlock ABI the kernel offers; above `landlock_abi` when it is newer than
    /// coder knows.
    pub kernel_landlock_abi: u32,
    /// Commands run in a mount namespace where everything but the writable roots is
    /// read-only (metadata included) and coder's own files in the workspace are read-only.
    pub read_only_view: bool,
    /// The read-only view is locked by a nested user namespace. `false` with a read-only
    /// view means root without user namespaces: `CAP_SYS_ADMIN` is dropped instead.
    pub user_namespace: bool,
    /// How network for commands is handled.
    pub network: NetworkEnforcement,
}

/// How network for commands is handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetworkEnforcement {
    /// `sandbox.network` is `on`.
    Allowed,
    /// Each command has a network namespace of its own with only loopback: TCP, UDP and
    /// DNS to anything outside are cut.
    Namespace,
    /// No network namespace: Landlock refuses every TCP bind and connect (loopback too);
    /// UDP, and so DNS, are not cut.
    LandlockTcp,
    /// Wanted off, but this kernel offers nothing that cuts it.
    NotEnforced,
}

impl SandboxEnforcement {
    /// Finds out what this kernel lets coder enforce (the namespace probe runs once per
    /// process).
    pub fn detect(network: SandboxNetwork) -> Self {
        let support = namespaces::support();
        let landlock_abi = landlock::usable_abi();
        let network = match network {
            SandboxNetwork::On => NetworkEnforcement::Allowed,
            SandboxNetwork::Off if support.network => NetworkEnforcement::Namespace,
            SandboxNetwork::Off if landlock_abi >= 4 => NetworkEnforcement::LandlockTcp,
            SandboxNetwork::Off => NetworkEnforcement::NotEnforced,
        };
        Self {
            landlock_abi,
            kernel_landlock_abi: landlock::kernel_abi(),
            read_only_view: support.mount,
            user_namespace: support.user,
            network,
        }
    }

    /// Whether commands are confined at all.
    pub fn is_enforced(&self) -> bool {
        self.landlock_abi > 0 || self.read_only_view
    }

    /// One line saying what is enforced, for the log.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if self.landlock_abi > 0 {
            let mut part = format!(
                "Landlock ABI {} (writes only in the writable roots)",
                self.landlock_abi
            );
            if self.kernel_landlock_abi > self.landlock_abi {
                part.push_str(&format!(
                    ", the kernel offers ABI {}",
                    self.kernel_landlock_abi
                ));
            }
            parts.push(part);
        } else {
            parts.push("no Landlock".to_owned());
        }
        if self.read_only_view {
            let lock = if self.user_namespace {
                "locked by a user namespace"
            } else {
                "CAP_SYS_ADMIN dropped"
            };
            parts.push(format!(
                "read-only mount namespace outside the writable roots, coder's own files \
                 read-only ({lock})"
            ));
        } else {
            parts.push("no mount namespace".to_owned());
        }
        parts.push(
            match self.network {
                NetworkEnforcement::Allowed => "network on",
                NetworkEnforcement::Namespace => "network off (own network namespace)",
                NetworkEnforcement::LandlockTcp => "network off (TCP only, by Landlock)",
                NetworkEnforcement::NotEnforced => "network off but not enforced",
            }
            .to_owned(),
        );
        parts.join("; ")
    }

    /// What is not enforced on this machine, one item each; empty when everything is.
    pub fn gaps(&self) -> Vec<String> {
        let mut gaps = Vec::new();
        if !self.read_only_view {
            gaps.push(
                "chmod, chown, touch and extended attributes on files outside the workspace, \
                 and writes to coder's own files (.coder/, .mcp.json, and git's config, \
                 hooks/, commondir and config.worktree), are not blocked: no mount namespace \
                 (user namespaces refused, or Linux before 5.12)"
                    .to_owned(),
            );
            if (1..3).contains(&self.landlock_abi) {
                gaps.push(
                    "truncating files outside the workspace is not blocked (needs Landlock \
                     ABI 3, Linux 6.2)"
                        .to_owned(),
                );
            }
        }
        match self.landlock_abi {
            0 => gaps.push(
                "device files are not confined and writes under /proc are not refused: no \
                 Landlock (Linux 5.13)"
                    .to_owned(),
            ),
            1..5 => gaps.push(
                "ioctl on device files is not restricted (needs Landlock ABI 5, Linux 6.10)"
                    .to_owned(),
            ),
            _ => {}
        }
        match self.network {
            NetworkEnforcement::Allowed | NetworkEnforcement::Namespace => {}
            NetworkEnforcement::LandlockTcp => gaps.push(
                "network: UDP and DNS are not cut, only TCP (no network namespace)".to_owned(),
            ),
            NetworkEnforcement::NotEnforced => gaps.push(
                "network is not cut (no network namespace, and Landlock before ABI 4, \
                 Linux 6.7)"
                    .to_owned(),
            ),
        }
        gaps
    }

    /// The `warning` for a session whose sandbox does not enforce everything.
    pub fn warning(&self) -> Option<String> {
        let gaps = self.gaps();
        (!gaps.is_empty()).then(|| {
            format!(
                "the sandbox does not enforce everything on this system: {}",
                gaps.join("; ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enforcement(
        landlock_abi: u32,
        read_only_view: bool,
        network: NetworkEnforcement,
    ) -> SandboxEnforcement {
        SandboxEnforcement {
            landlock_abi,
            kernel_landlock_abi: landlock_abi,
            read_only_view,
            user_namespace: read_only_view,
            network,
        }
    }

    #[test]
    fn each_missing_kernel_feature_is_named() {
        use NetworkEnforcement::*;
        let cases: [(SandboxEnforcement, &[&str]); 6] = [
            (enforcement(7, true, Namespace), &[]),
            (enforcement(7, true, Allowed), &[]),
            (enforcement(4, true, Namespace), &["ioctl"]),
            (
                enforcement(2, false, NotEnforced),
                &["chmod, chown", "truncating", "ioctl", "network is not cut"],
            ),
            (
                enforcement(6, false, LandlockTcp),
                &["chmod, chown", "UDP and DNS"],
            ),
            (enforcement(0, true, Namespace), &["no Landlock"]),
        ];
        for (case, wanted) in cases {
            let gaps = case.gaps();
            assert_eq!(gaps.len(), wanted.len(), "{case:?}: {gaps:?}");
            for (gap, word) in gaps.iter().zip(wanted) {
                assert!(gap.contains(word), "{case:?}: {gap} lacks {word}");
            }
            assert_eq!(case.warning().is_some(), !wanted.is_empty());
        }
    }

    #[test]
    fn the_summary_names_the_abi_and_a_newer_kernel() {
        let mut case = enforcement(10, true, NetworkEnforcement::Namespace);
        case.kernel_landlock_abi = 11;
        assert_eq!(
            case.summary(),
            "Landlock ABI 10 (writes only in the writable roots), the kernel offers ABI 11; \
             read-only mount namespace outside the writable roots, coder's own files \
             read-only (locked by a user namespace); network off (own network namespace)"
        );
    }
}
