"""The share coordinator: share groups' durable state on ``__share_group_state`` (KIP-932)."""
