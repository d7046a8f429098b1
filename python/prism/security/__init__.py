"""Security: permission policies, credentials, redaction."""

from prism.security.credentials import (
    CredentialChain,
    CredentialResolver,
    CredentialSource,
    OAuthCredential,
    OAuthToken,
    ResolvedCredential,
    callable_credential,
    create_credential_chain,
    create_oauth_credential,
    env_credential,
    explicit_credential,
    resolve_credential,
)
from prism.security.permissions import (
    PermissionDecision,
    PermissionPolicy,
    PermissionRequest,
    check_permission,
)
from prism.security.redaction import (
    NoopRedactor,
    SecretRedactor,
    create_redactor,
    redact_error_info,
    redact_event,
)

__all__ = [
    "CredentialChain",
    "CredentialResolver",
    "CredentialSource",
    "NoopRedactor",
    "OAuthCredential",
    "OAuthToken",
    "PermissionDecision",
    "PermissionPolicy",
    "PermissionRequest",
    "ResolvedCredential",
    "SecretRedactor",
    "callable_credential",
    "check_permission",
    "create_credential_chain",
    "create_oauth_credential",
    "create_redactor",
    "env_credential",
    "explicit_credential",
    "redact_error_info",
    "redact_event",
    "resolve_credential",
]
