//! The few calls the installer makes to a core's `/api/v1`, with its token.

use serde_json::Value;

/// A core's API, as one principal sees it.
#[derive(Debug, Clone)]
pub struct Core {
    base: String,
    token: String,
    client: reqwest::Client,
}

impl Core {
    /// `url` is the core's address (`http://127.0.0.1:8700`); the token comes from
    /// `SKILL_CORE_TOKEN`.
    pub fn new(url: &str, token: String) -> Self {
        let base = format!("{}/api/v1", url.trim_end_matches('/'));
        Self { base, token, client: reqwest::Client::new() }
    }

    /// The API's address, for messages.
    pub fn address(&self) -> &str {
        &self.base
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<(u16, Value), String> {
        let response = request
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|error| format!("the core at {} does not answer: {error}", self.base))?;
        let status = response.status().as_u16();
        let body = response.json::<Value>().await.unwrap_or(Value::Null);
        Ok((status, body))
    }

    /// The published version `name@version`, or `None`.
    pub async fn skill(&self, reference: &str) -> Result<Option<Value>, String> {
        let (status, body) = self.send(self.client.get(format!("{}/skills/{reference}", self.base))).await?;
        match status {
            200 => Ok(Some(body)),
            404 => Ok(None),
            _ => Err(failure("reading", reference, status, &body)),
        }
    }

    /// Publishes a version.
    pub async fn create(&self, reference: &str, body: &Value) -> Result<(), String> {
        let (status, answer) = self.send(self.client.post(format!("{}/skills", self.base)).json(body)).await?;
        match status {
            201 => Ok(()),
            409 if answer["error"]["code"] == "skill_exists" => Err(format!(
                "{reference} was published by someone else since the plan (plan_stale): run the plan again"
            )),
            _ => Err(failure("publishing", reference, status, &answer)),
        }
    }

    pub async fn patch(&self, reference: &str, id: &str, row_version: i64, body: &Value) -> Result<(), String> {
        let request = self
            .client
            .patch(format!("{}/skills/{id}", self.base))
            .header("if-match", format!("\"skill-{row_version}\""))
            .json(body);
        let (status, answer) = self.send(request).await?;
        match status {
            200 => Ok(()),
            409 if answer["error"]["code"] == "version_conflict" => {
                Err(format!("{reference} changed in the core since the plan (plan_stale): run the plan again"))
            }
            _ => Err(failure("changing", reference, status, &answer)),
        }
    }

    /// The last install of a package, or `None`.
    pub async fn install(&self, key: &str) -> Result<Option<Value>, String> {
        let (status, body) = self.send(self.client.get(format!("{}/packages/{key}", self.base))).await?;
        match status {
            200 => Ok(Some(body)),
            404 => Ok(None),
            _ => Err(failure("reading the install of", key, status, &body)),
        }
    }

    pub async fn record(&self, body: &Value) -> Result<(), String> {
        let (status, answer) = self.send(self.client.post(format!("{}/packages:record", self.base)).json(body)).await?;
        match status {
            200 => Ok(()),
            _ => Err(failure(
                "recording the install of",
                body["package"]["key"].as_str().unwrap_or("?"),
                status,
                &answer,
            )),
        }
    }
}

fn failure(doing: &str, what: &str, status: u16, body: &Value) -> String {
    let code = body["error"]["code"].as_str().unwrap_or("no envelope");
    let message = body["error"]["message"].as_str().unwrap_or("");
    let hint = match status {
        401 => " (set SKILL_CORE_TOKEN to a valid token: skill-core token create)",
        403 => " (the token's principal needs org.manage)",
        _ => "",
    };
    format!("{doing} {what}: the core answered {status} {code}: {message}{hint}")
}
