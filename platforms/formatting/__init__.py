"""Rendering the agent's Markdown for each chat platform.

The agent writes Markdown (CommonMark with GFM tables and strikethrough). The
outbox splits it to the platform's limit (`gateway.splitting`), and each adapter
renders every part just before it sends it: `telegram_html` (parse_mode=HTML),
`slack_mrkdwn` and `discord_markdown`, all walking the token stream of one
parser (`markdown`). An adapter's ``measure`` renders too, so the outbox measures
what the platform counts.
"""
