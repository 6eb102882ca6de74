//! How the installer reports a failed call to the core: what it was doing, the core's answer,
//! and what to do about it.

use skill_client::ClientError;

/// A failed call as the installer reports it: what it was doing, the core's answer, and what
/// to do about it.
pub(crate) fn failure(doing: &str, what: &str, error: &ClientError) -> String {
    match error {
        ClientError::Api(api) => {
            let hint = match (api.status, api.code()) {
                (409, "skill_exists") => {
                    return format!(
                        "{what} was published by someone else since the plan (plan_stale): run the plan again"
                    );
                }
                (409, "version_conflict") => {
                    return format!("{what} changed in the core since the plan (plan_stale): run the plan again");
                }
                (401, _) => " (set SKILL_CORE_TOKEN to a valid token: skill-core token create)",
                (403, _) => " (the token's principal needs org.manage)",
                _ => "",
            };
            format!("{doing} {what}: the core answered {api}{hint}")
        }
        other => format!("{doing} {what}: {other}"),
    }
}
