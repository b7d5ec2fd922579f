-- Recall's passage context (recall_api/recall/passages.py) finds a fact's source turns by
-- message id, and the turns around them in journal order within their conversation
-- (store/turn_order.py); the extractor's conversation_history reads the same order.
CREATE INDEX IF NOT EXISTS messages_message_id_idx ON messages (bank_id, message_id);
CREATE INDEX IF NOT EXISTS messages_conversation_idx ON messages (bank_id, conversation_id, seq)
    WHERE conversation_id IS NOT NULL;
