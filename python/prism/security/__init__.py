"""Security: permission policies, credentials, redaction."""

from prism.security.permissions import (
    PermissionDecision,
    PermissionPolicy,
    PermissionRequest,
    check_permission,
)

__all__ = ["PermissionDecision", "PermissionPolicy", "PermissionRequest", "check_permission"]
