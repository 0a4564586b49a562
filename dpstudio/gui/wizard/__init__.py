"""The release wizard: one file per page; pages read and edit ``Session.recipe`` only."""
