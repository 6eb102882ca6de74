//! What a call to the core can end in besides its answer.

use skill_api::ErrorBody;

/// The core answered with its error envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: u16,
    pub body: ErrorBody,
}

impl ApiError {
    pub fn code(&self) -> &str {
        &self.body.code
    }

    pub fn retryable(&self) -> bool {
        self.body.retryable
    }

    pub fn request_id(&self) -> Option<&str> {
        self.body.request_id.as_deref()
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status, self.body.code, self.body.message)?;
        // Where in the request the problem is, when the core says.
        for key in ["item", "field"] {
            if let Some(place) = self.body.details.get(key).and_then(serde_json::Value::as_str) {
                write!(f, " [{key} {place}]")?;
            }
        }
        if let Some(id) = &self.body.request_id {
            write!(f, " (request {id})")?;
        }
        Ok(())
    }
}

/// Why a call gave no answer of the expected type.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The core refused or failed the request, with its envelope.
    #[error("the core answered {0}")]
    Api(Box<ApiError>),
    /// No answer: the connection failed or timed out.
    #[error("the core at {address} does not answer: {reason}")]
    Unreachable { address: String, reason: String },
    /// An answer that is neither the expected body nor an error envelope (a proxy's page, say).
    #[error("the core at {address} answered {status} with an unexpected body: {excerpt}")]
    Unexpected { address: String, status: u16, excerpt: String },
    /// The address is not an http:// or https:// URL.
    #[error("the core's address {0:?} is not an http:// or https:// URL")]
    Address(String),
    /// A path parameter that a URL cannot carry as it is (`..` would step to another route).
    #[error("{0:?} cannot be a path parameter: a segment of dots only would step to another route")]
    Parameter(String),
}

impl ClientError {
    /// The envelope, when the core answered with one.
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            Self::Api(error) => Some(error.as_ref()),
            _ => None,
        }
    }

    /// The error code, when the core answered with an envelope.
    pub fn code(&self) -> Option<&str> {
        self.api().map(ApiError::code)
    }

    /// Whether the same call may succeed later.
    pub fn retryable(&self) -> bool {
        match self {
            Self::Api(error) => error.retryable(),
            Self::Unreachable { .. } => true,
            Self::Unexpected { status, .. } => matches!(status, 502..=504),
            Self::Address(_) | Self::Parameter(_) => false,
        }
    }
}
