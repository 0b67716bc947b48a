/*
 * hub.h — models from the Hugging Face hub: `inferno pull ORG/NAME[:TAG]`
 * downloads into the hub's cache, and `-m ORG/NAME[:TAG]` finds them there
 * offline. Linked into the CLI only (libcurl stays out of libinferno).
 *
 * The cache is the one huggingface_hub and llama.cpp's -hf share:
 *   HUB/models--ORG--NAME/blobs/<etag>           the file's bytes (etag: sha256 for LFS files,
 *                                                the git blob id otherwise)
 *   HUB/models--ORG--NAME/blobs/<etag>.incomplete a download in progress (resumed with Range)
 *   HUB/models--ORG--NAME/snapshots/<commit>/<file> -> ../../blobs/<etag>
 *   HUB/models--ORG--NAME/refs/main              the commit main pointed at when pulled
 *   HUB/.locks/models--ORG--NAME/<etag>.lock     flock'ed while a blob downloads (as huggingface_hub)
 * with HUB = $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.
 *
 * Which file a tag names follows llama.cpp's -hf: a GGUF whose path holds
 * TAG followed by '.' or '-' (case-insensitive), not a projector/imatrix,
 * except that a file whose own tag (the name's last -TAG or .TAG) is TAG
 * wins (so :F16 is not the BF16 file that comes first, as it is in -hf);
 * no tag: Q4_K_M, then Q8_0, then the first GGUF; a split GGUF
 * (NAME-00001-of-00003.gguf) is chosen by its first part and pulled whole.
 *
 * Everything the hub sends is untrusted: names are checked as relative paths
 * before they touch the disk, etags and commits by their shape, sizes before
 * any allocation, and every error is one line naming the file or field.
 * Functions return true on success, or false with err->msg set.
 */
#ifndef INF_HUB_H
#define INF_HUB_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    HUB_REPO_MAX = 256,   /* ORG/NAME, as the hub limits it (llama.cpp checks the same) */
    HUB_TAG_MAX = 64,
    HUB_PATH_MAX = 4096,
    HUB_COMMIT_LEN = 40,  /* hex digits of a git commit */
    HUB_ETAG_MAX = 128,
};

typedef struct hub_error {
    char msg[512]; /* one line */
} hub_error;

/* Formats the message into err as one line (control characters, which
 * names and the hub's answers may hold, become spaces); returns false. */
bool hub_fail(hub_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- names (hub_names.c): pure string functions ---- */

/* ORG/NAME: [A-Za-z0-9_.-] with exactly one '/', no leading/trailing or
 * doubled punctuation, at most HUB_REPO_MAX-1 bytes. */
bool hub_repo_id_valid(const char *repo);
/* "ORG/NAME" or "ORG/NAME:TAG" (TAG: [A-Za-z0-9_]+, case kept) into repo
 * and tag (empty when none). False when spec is not of that shape. */
bool hub_parse_spec(const char *spec, char repo[HUB_REPO_MAX], char tag[HUB_TAG_MAX]);
/* A file name from the hub that is safe below a snapshot folder: relative,
 * no empty, "." or ".." component, printable ASCII or UTF-8, no backslash. */
bool hub_relative_path_valid(const char *path);
/* A 40-digit lowercase-or-uppercase hex commit. */
bool hub_commit_valid(const char *s);
/* An etag usable as a blob name: [A-Za-z0-9_-], 1..HUB_ETAG_MAX-1 bytes. */
bool hub_etag_valid(const char *s);
/* 64 hex digits: an LFS etag, which is the file's sha256. */
bool hub_etag_is_sha256(const char *s);

/* What a GGUF file name says: prefix (the path without .gguf and without
 * -NNNNN-of-NNNNN), tag (the upper-cased [A-Za-z0-9_]+ after the prefix's
 * last '-' or '.'; empty when none), split index and count (1, 1 when not
 * split). False when path does not end in .gguf. */
typedef struct hub_gguf_name {
    char prefix[HUB_PATH_MAX];
    char tag[HUB_TAG_MAX];
    int index, count;
} hub_gguf_name;
bool hub_gguf_name_parse(const char *path, hub_gguf_name *out);
/* A model GGUF: ends in .gguf and its file name holds none of mmproj,
 * imatrix, mtp-, eagle3-, dflash-, dspark- (the side files -hf skips). */
bool hub_gguf_is_model(const char *path);
/* The model GGUF that tag names (see above; "" = the default order), as an
 * index into paths, or -1. A split file counts only as its first part. */
int hub_gguf_choose(const char *const *paths, size_t n, const char *tag);
/* The parts of chosen's split group (itself alone when not split) as
 * indexes into paths in part order, into out[cap]; returns how many, or 0
 * when a part is missing (out[0] then holds the count expected). */
size_t hub_gguf_parts(const char *const *paths, size_t n, int chosen, size_t *out, size_t cap);
/* The distinct tags of the model GGUFs in paths, ", "-separated, into out. */
void hub_gguf_tags(const char *const *paths, size_t n, char *out, size_t cap);

/* The API's answer for a revision (/api/models/ORG/NAME/revision/REV):
 * "sha" (a commit, lower-cased into commit) and "siblings"[].rfilename,
 * each a safe relative path, at most HUB_MAX_SIBLINGS, as *names (malloc'd,
 * sorted; free with hub_free_list). */
enum { HUB_MAX_SIBLINGS = 100000 };
bool hub_revision_parse(const char *json, size_t len, char commit[HUB_COMMIT_LEN + 1], char ***names, size_t *n,
                        hub_error *err);

/* ---- the cache (hub_cache.c): no network ---- */

/* The hub cache folder (see above). False when no variable or home gives one. */
bool hub_cache_dir(char out[HUB_PATH_MAX], hub_error *err);
/* HUB/models--ORG--NAME */
void hub_repo_dir(const char *hub, const char *repo, char out[HUB_PATH_MAX]);
/* refs/REV of a repo folder: true with the commit when it holds one. */
bool hub_ref_read(const char *repo_dir, const char *rev, char commit[HUB_COMMIT_LEN + 1]);
/* Writes refs/REV (a temporary file, then a rename). */
bool hub_ref_write(const char *repo_dir, const char *rev, const char *commit, hub_error *err);
/* The files below dir (regular files and symlinks, recursively, at most
 * 4096), as malloc'd relative paths sorted by name. */
bool hub_list_files(const char *dir, char ***paths, size_t *n, hub_error *err);
void hub_free_list(char **paths, size_t n);
/* snapshots/COMMIT/FILE -> ../../blobs/ETAG (one more ../ per folder in
 * FILE), replacing what was there; parent folders made. */
bool hub_snapshot_link(const char *repo_dir, const char *commit, const char *file, const char *etag,
                       hub_error *err);
/* mkdir -p */
bool hub_mkdirs(const char *dir, hub_error *err);

/* What -m ORG/NAME[:TAG] means, offline: the cached GGUF the tag names (the
 * first part of a split one, when every part is cached), or without a tag
 * and without GGUFs the snapshot folder (a safetensors checkpoint). *path
 * is malloc'd. Errors say what to run (not pulled; tag not cached, listing
 * the cached tags; a part of a split GGUF missing). */
bool hub_resolve_cached(const char *repo, const char *tag, char **path, hub_error *err);

/* ---- the network (hub_http.c, libcurl) ---- */

typedef struct hub_client hub_client;

/* A download's progress: bytes of the file so far (resumed bytes included)
 * and its size. */
typedef void (*hub_progress_fn)(void *user, const char *file, uint64_t done_bytes, uint64_t total_bytes);

typedef struct hub_client_options {
    const char *endpoint;       /* e.g. https://huggingface.co (no trailing slash needed) */
    const char *token;          /* NULL or "": anonymous */
    hub_progress_fn progress;   /* optional */
    void *progress_user;
    volatile sig_atomic_t *cancel; /* optional: a transfer stops when *cancel becomes nonzero */
    int max_attempts;           /* tries per download, resuming each time; 0 = 5 */
    double retry_delay_s;       /* before the first retry, doubling; 0 = 1 s */
} hub_client_options;

/* Call curl_global_init first (hub_global_init). */
bool hub_global_init(hub_error *err);
void hub_global_cleanup(void);
hub_client *hub_client_new(const hub_client_options *opt, hub_error *err);
void hub_client_free(hub_client *c);

/* GET ENDPOINT/PATH into a malloc'd NUL-terminated body of at most
 * max_bytes. True for a 200; otherwise the error names the status and the
 * hub's X-Error-Message, with *status set (0 when no answer came). */
bool hub_get(hub_client *c, const char *path, size_t max_bytes, char **body, size_t *len, long *status,
             hub_error *err);

/* What the HEAD of ENDPOINT/REPO/resolve/REV/FILE says (following only
 * redirects within the hub, as huggingface_hub does). */
typedef struct hub_file_meta {
    char etag[HUB_ETAG_MAX];        /* X-Linked-Etag, else ETag; quotes and W/ removed */
    char commit[HUB_COMMIT_LEN + 1]; /* X-Repo-Commit ("" when absent) */
    uint64_t size_bytes;            /* X-Linked-Size, else Content-Length of a non-redirect */
    char *location;                 /* where the bytes are (the redirect, or the URL itself); malloc'd */
} hub_file_meta;
bool hub_head_file(hub_client *c, const char *repo, const char *rev, const char *file, hub_file_meta *meta,
                   hub_error *err);
void hub_file_meta_free(hub_file_meta *meta);

/* Downloads url (following redirects) into incomplete_path, resuming from
 * the bytes already there with a Range request and retrying a dropped
 * transfer; checks the size and, when sha256_hex is not NULL, the digest
 * (of the resumed bytes too). On a digest or size mismatch the
 * incomplete file is removed (its bytes are wrong, resuming cannot help);
 * on a transfer failure it is kept for the next try. */
bool hub_download(hub_client *c, const char *url, const char *file, const char *incomplete_path,
                  uint64_t size_bytes, const char *sha256_hex, hub_error *err);

/* ---- pull (hub_pull.c) ---- */

typedef struct hub_pull_options {
    const char *repo;           /* ORG/NAME */
    const char *tag;            /* "" or NULL: the default GGUF, or the safetensors checkpoint */
    const char *revision;       /* NULL: main */
    hub_client *client;
    /* a line per file (optional): "cached" or "downloaded", and its size */
    void (*on_file)(void *user, const char *file, bool downloaded, uint64_t size_bytes);
    void *user;
} hub_pull_options;

typedef struct hub_pull_result {
    char path[HUB_PATH_MAX];    /* what -m loads: the GGUF (first part) or the snapshot folder */
    char commit[HUB_COMMIT_LEN + 1];
    size_t n_files, n_downloaded;
    uint64_t downloaded_bytes;
} hub_pull_result;

bool hub_pull(const hub_pull_options *o, hub_pull_result *r, hub_error *err);

#endif
