/* e2b-wire.h - what the e2b and cube backends read from a server, checked
 * before it is used: the control plane's JSON (sandboxes, snapshots,
 * templates, entries, errors) and envd's Connect stream of exec events.
 * Nothing here opens a connection, so every parser can be fed hostile
 * bytes directly (tests/fuzz/fuzz-e2b-json.c, fuzz-e2b-stream.c).
 *
 * Promises:
 *   - a value the server returns reaches a URL, a header, a host name or a
 *     document only after its check here: ids are [A-Za-z0-9-]{1,128},
 *     domains are DNS names (labels [A-Za-z0-9-]{1,63}, at most 253
 *     bytes), tokens and other names are 1..1024 (names: 256) visible
 *     ASCII bytes (no space, no CR or LF, nothing that could end a header);
 *   - a value that fails is refused with kind `internal` ("the server sent
 *     an invalid ..."), the value shown with anything but visible ASCII
 *     replaced by '?', so no message carries a line break from a server;
 *   - the exec stream's envelopes are bounded (16 MiB a message) before
 *     they are buffered, and its first `start` event is the only one acted
 *     upon: a repeated start never starts a second stdin feeder. */
#ifndef SBX_E2B_WIRE_H
#define SBX_E2B_WIRE_H

#include <stddef.h>
#include <json-c/json.h>

#include "backend.h"
#include "http.h"

#define E2B_TOKEN_MAX 1024
#define E2B_NAME_MAX 256

/* Ids reach a URL only when they are [A-Za-z0-9-]{1,128}; a bad one is
 * invalid_request (the caller's id) ... */
int e2b_check_id(const char *id, const char *what, const char *op, struct sbx_err *err);
/* ... and an id the server returned that is bad is internal. */
int e2b_reply_id(const char *id, const char *what, const char *op, struct sbx_err *err);
/* A token or name the server returned: 1..max visible ASCII bytes; else
 * internal. */
int e2b_reply_token(const char *v, size_t max, const char *what, const char *op,
		    struct sbx_err *err);
/* 1 when `d` is a DNS name as above (no leading, trailing or double dot). */
int e2b_dns_name(const char *d);
/* 1 when host name `d` is `allowed` or below it (`x.allowed`). */
int e2b_domain_within(const char *d, const char *allowed);

/* Fill *sb from Sandbox, SandboxDetail or ListedSandbox JSON; `cube` and
 * `profile` name the backend and profile.  -1 (internal) when a field the
 * handle keeps fails its check; *sb may then hold some fields (clear it). */
int e2b_wire_fill(int cube, const char *profile, struct sbx_sandbox *sb, json_object *j,
		  struct sbx_err *err);
/* sbx's own metadata keys are "sbx.*"; on the wire they are "sbx_*"
 * (an E2B-compatible server may reserve "sbx." for itself, as sbx-serve
 * does, and a server that runs on sbx must not take its clients'
 * sandboxes for its own).  Both return a new object. */
json_object *e2b_md_to_wire(json_object *md);
json_object *e2b_md_from_wire(json_object *md);
/* `key` of `o` when it is an array, else NULL. */
json_object *e2b_json_arr(json_object *o, const char *key);
/* A snapshot (snapshotID, names, sandboxID, createdAt) / a template
 * (templateID, aliases, kind, createdAt) / a filesystem entry (envd's
 * EntryInfo).  -1 (internal, *out cleared) on a value that fails. */
int e2b_wire_snapshot(json_object *j, struct sbx_snapshot_ref *out, struct sbx_err *err);
int e2b_wire_template(json_object *j, struct sbx_template *out, struct sbx_err *err);
void e2b_wire_dirent(json_object *e, struct sbx_dirent *d);

/* A non-2xx data-plane or API reply as an error, with the reason its
 * text names (e2b_reason in e2b-wire.c); returns -1. */
int e2b_status_err(const char *op, const struct sbx_http_resp *r, struct sbx_err *err);
/* A Connect error code ("not_found") as a kind. */
enum sbx_kind e2b_connect_kind(const char *code);

/* envd's process.Process/Start stream (e2b-wire §3.6): envelopes of a flag
 * byte and a 4-byte length, each a JSON message {"event": {start | data |
 * keepalive | end}}, the last (flag 2) the end-of-stream message {} or
 * {"error": {code, message}}.  Output goes to the raw fds when >= 0, else
 * into res (out_cap a stream, the rest counted as truncated). */
struct e2b_exec_stream {
	struct sbx_exec_result *res;
	int raw_out_fd, raw_err_fd;
	size_t out_cap;
	/* Called once, at the first start event (NULL: none). */
	int (*on_start)(void *ctx, int pid, struct sbx_err *err);
	void *ctx;
	int started, ended, pid, frames;
	int end_error;            /* end_err holds the trailer's error */
	struct sbx_err end_err;
	char *buf;                /* unparsed bytes */
	size_t len, cap;
};
/* Take the next bytes of the stream; -1 with err on a malformed or
 * oversized envelope, output that is not base64, or what on_start or a
 * raw fd write returned. */
int e2b_exec_stream_feed(struct e2b_exec_stream *s, const char *data, size_t len,
			 struct sbx_err *err);
void e2b_exec_stream_free(struct e2b_exec_stream *s);

#endif
