"""Translations between the OpenAI APIs, Anthropic's Messages API and Gemini's API.

Pure functions over decoded JSON bodies and SSE event blocks (no I/O), used at the
provider boundary when a client's API differs from its target provider's:

* :mod:`.chat_to_messages`: a chat-completions client whose alias targets an Anthropic
  provider (request out, answer, stream and error back);
* :mod:`.messages_to_chat`: an Anthropic Messages client (Claude Code, the ``anthropic``
  SDK) whose alias targets an OpenAI-compatible provider;
* :mod:`.responses_to_chat`: a Responses API client whose target has no Responses API
  (chat-only servers; and, composed with :mod:`.chat_to_messages`, Anthropic);
* :mod:`.chat_to_gemini`: a chat-completions client whose alias targets a Gemini provider
  (and, composed with the two above, a Responses or Messages client);
* :mod:`.gemini_to_chat`: a Gemini API client (Gemini CLI, ``google-genai``), whose
  requests the server translates to Chat Completions before the pipeline (and whose
  answers, streams and errors it translates back);
* :mod:`.fields` and :mod:`.chat_chunks`: what they read and write alike.

Each module's docstring lists what it translates, what it drops on purpose and why, and
what it refuses with :class:`~hookgate.errors.InvalidRequest` (a request field the target
cannot honour is refused, never silently dropped).
"""
