//! The token-estimate rules, in one place. Both the strict estimators
//! (`estimate_message_tokens` and friends) and the attention pass's
//! measurement apply these; docs/native.md lists them.
//!
//! An estimate is `ceil(chars / 4)`, where the chars of a value are the code
//! points of its compact JSON form. Each content block is rounded on its own,
//! so a message's estimate is exactly the sum of its blocks plus
//! `MESSAGE_OVERHEAD_TOKENS`, and replacing one block changes the total by
//! exactly that block's difference (the attention planner relies on this).

/// Fixed cost of an image block, whatever its size or encoding.
pub const IMAGE_TOKENS: u64 = 1000;
/// Fixed cost of every message (role, separators, framing).
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;

/// Tokens of `chars` characters.
#[inline]
pub fn ceil4(chars: u64) -> u64 {
    chars.div_ceil(4)
}

/// The block types the rules distinguish (by the block's `type` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// Counts the code points of `text`.
    Text,
    /// Counts the code points of `text` (the signature is not counted).
    Thinking,
    /// Costs `IMAGE_TOKENS`.
    Image,
    /// Counts the code points of `name` plus the JSON of `arguments`.
    ToolCall,
    /// Counts the code points of `name` plus the JSON of `result`.
    ToolResult,
    /// Any other type: the JSON of the whole block.
    Other,
}

impl BlockKind {
    pub fn of(block_type: &str) -> Self {
        match block_type {
            "text" => BlockKind::Text,
            "thinking" => BlockKind::Thinking,
            "image" => BlockKind::Image,
            "tool_call" => BlockKind::ToolCall,
            "tool_result" => BlockKind::ToolResult,
            _ => BlockKind::Other,
        }
    }
}

/// Tokens of one block of `kind` whose counted characters (see `BlockKind`)
/// are `chars`; an image ignores `chars`.
#[inline]
pub fn block_tokens(kind: BlockKind, chars: u64) -> u64 {
    match kind {
        BlockKind::Image => IMAGE_TOKENS,
        _ => ceil4(chars),
    }
}

/// The session-entry kinds (the JSONL validator accepts exactly these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Message,
    Summary,
    ModelChange,
    Custom,
    Compaction,
    Label,
}

impl EntryKind {
    pub const ALL: [EntryKind; 6] = [
        EntryKind::Message,
        EntryKind::Summary,
        EntryKind::ModelChange,
        EntryKind::Custom,
        EntryKind::Compaction,
        EntryKind::Label,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EntryKind::Message => "message",
            EntryKind::Summary => "summary",
            EntryKind::ModelChange => "model_change",
            EntryKind::Custom => "custom",
            EntryKind::Compaction => "compaction",
            EntryKind::Label => "label",
        }
    }

    pub fn of(kind: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == kind)
    }
}

/// What an entry of a kind costs, apart from a message's own blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryCost {
    /// The entry costs its message (`MESSAGE_OVERHEAD_TOKENS` + blocks).
    Message,
    /// Sent as a message holding `summary`: `ceil4(summary) + overhead`.
    Summary,
    /// Not sent as content: `MESSAGE_OVERHEAD_TOKENS`.
    Overhead,
}

impl EntryKind {
    pub fn cost(self) -> EntryCost {
        match self {
            EntryKind::Message => EntryCost::Message,
            EntryKind::Summary | EntryKind::Compaction => EntryCost::Summary,
            EntryKind::ModelChange | EntryKind::Custom | EntryKind::Label => EntryCost::Overhead,
        }
    }
}

/// Tokens of a summary or compaction entry whose summary has `chars` code points.
#[inline]
pub fn summary_entry_tokens(chars: u64) -> u64 {
    ceil4(chars) + MESSAGE_OVERHEAD_TOKENS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_rules() {
        assert_eq!(BlockKind::of("text"), BlockKind::Text);
        assert_eq!(BlockKind::of("tool_result"), BlockKind::ToolResult);
        assert_eq!(BlockKind::of("video"), BlockKind::Other);
        assert_eq!(block_tokens(BlockKind::Image, 1 << 40), IMAGE_TOKENS);
        assert_eq!(block_tokens(BlockKind::Text, 0), 0);
        assert_eq!(block_tokens(BlockKind::Text, 5), 2);
        assert_eq!(block_tokens(BlockKind::Other, 8), 2);
    }

    #[test]
    fn entry_rules() {
        for kind in EntryKind::ALL {
            assert_eq!(EntryKind::of(kind.name()), Some(kind));
        }
        assert_eq!(EntryKind::of("bogus"), None);
        assert_eq!(EntryKind::Compaction.cost(), EntryCost::Summary);
        assert_eq!(EntryKind::Label.cost(), EntryCost::Overhead);
        assert_eq!(summary_entry_tokens(5), 2 + MESSAGE_OVERHEAD_TOKENS);
    }
}
