"""Compaction, one owner: the engine interface (`engine`), finding an engine by name (`registry`), the
built-in compressor (`compressor`) and the API's server-side compaction (`server`), where a history may
be cut (`boundaries`), what a summary says and how it is framed (`prompt`), and the summarizer that
writes it (`summarizer`). All pure: the gateway loads and persists each session's engine state.
"""
