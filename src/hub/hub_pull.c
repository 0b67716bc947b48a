/*
 * hub_pull.c — `inferno pull ORG/NAME[:TAG]`: what to download and where it
 * goes. The revision's commit and file list come from the hub API
 * (/api/models/ORG/NAME/revision/REV: "sha" and "siblings"); then, as
 * huggingface_hub's snapshot_download does, each file is fetched by that
 * commit: a file whose snapshot link already exists is not asked about
 * again (a second pull costs one API call), otherwise its HEAD gives the
 * etag, size and commit, the blob is downloaded (resumed, verified) unless
 * it is there, and the snapshot link made. refs/REV is written last, so the
 * offline -m resolution never sees a half-pulled revision.
 *
 * A GGUF repository gives the file the tag names (all parts of a split
 * one); a repository without GGUFs gives a safetensors checkpoint: config,
 * generation config, tokenizer*.json, and model.safetensors or the shards
 * its index lists.
 */
#include "hub/hub.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    API_MAX_BYTES = 16 << 20,   /* a revision's JSON (siblings of thousands of files fit) */
    INDEX_MAX_BYTES = 64 << 20, /* model.safetensors.index.json */
    MAX_PARTS = 1024,           /* GGUF parts or safetensors shards */
};

/* vsnprintf into a path buffer; false when it does not fit. */
static bool path_fmt(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool path_fmt(char *out, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < cap;
}

/* A branch, tag or commit: [A-Za-z0-9._-/], no "..", no leading '/'. */
static bool revision_valid(const char *rev) {
    size_t n = strlen(rev);
    if (n == 0 || n > 200 || rev[0] == '/' || rev[n - 1] == '/' || strstr(rev, "..") || strstr(rev, "//")) return false;
    for (const char *p = rev; *p; p++)
        if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') && !(*p >= '0' && *p <= '9') && *p != '.' &&
            *p != '_' && *p != '-' && *p != '/')
            return false;
    return true;
}

typedef struct pull {
    const hub_pull_options *o;
    const char *rev;
    char hub[HUB_PATH_MAX];
    char repo_dir[HUB_PATH_MAX];
    char commit[HUB_COMMIT_LEN + 1];
    char **siblings;        /* sorted */
    size_t n_siblings;
    hub_pull_result *r;
} pull;

static bool has_sibling(const pull *p, const char *name) {
    for (size_t i = 0; i < p->n_siblings; i++)
        if (!strcmp(p->siblings[i], name)) return true;
    return false;
}

/* The API's answer for the revision: commit and file names. */
static bool read_revision(pull *p, hub_error *err) {
    /* the revision as one path segment ('/' of refs/pr/1 as %2F, as huggingface_hub quotes it);
     * its other characters need no escaping */
    char rev_segment[700] = "", path[1024];
    for (const char *c = p->rev; *c; c++) {
        size_t used = strlen(rev_segment);
        snprintf(rev_segment + used, sizeof rev_segment - used, *c == '/' ? "%%2F" : "%c", *c);
    }
    snprintf(path, sizeof path, "/api/models/%s/revision/%s", p->o->repo, rev_segment);
    char *body = NULL;
    size_t len = 0;
    long status = 0;
    if (!hub_get(p->o->client, path, API_MAX_BYTES, &body, &len, &status, err)) {
        char detail[sizeof err->msg];
        snprintf(detail, sizeof detail, "%s", err->msg);
        if (status == 401 || status == 403)
            return hub_fail(err, "%s: the hub refused access (%s); a private or gated repository needs a token in HF_TOKEN, "
                        "and a repository that does not exist answers the same", p->o->repo, detail);
        if (status == 404) return hub_fail(err, "%s: no such repository or revision '%s' (%s)", p->o->repo, p->rev, detail);
        return hub_fail(err, "%s: %s", p->o->repo, detail);
    }
    bool ok = hub_revision_parse(body, len, p->commit, &p->siblings, &p->n_siblings, err);
    free(body);
    if (!ok) {
        char detail[sizeof err->msg];
        snprintf(detail, sizeof detail, "%s", err->msg);
        return hub_fail(err, "%s: the hub's %s: %s", p->o->repo, path, detail);
    }
    return true;
}

/* Holds HUB/.locks/models--ORG--NAME/ETAG.lock (huggingface_hub's lock
 * file, so the two tools do not download one blob at the same time). */
static int lock_blob(const pull *p, const char *etag, hub_error *err) {
    char dir[HUB_PATH_MAX], path[HUB_PATH_MAX];
    const char *name = strrchr(p->repo_dir, '/') + 1;
    if (!path_fmt(dir, sizeof dir, "%s/.locks/%s", p->hub, name) || !path_fmt(path, sizeof path, "%s/%s.lock", dir, etag)) {
        hub_fail(err, "path too long: %s/.locks", p->hub);
        return -1;
    }
    if (!hub_mkdirs(dir, err)) return -1;
    int fd = open(path, O_RDWR | O_CREAT, 0666);
    if (fd < 0) {
        hub_fail(err, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    while (flock(fd, LOCK_EX) != 0) {
        if (errno == EINTR) continue;
        hub_fail(err, "cannot lock %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static bool pull_file(pull *p, const char *file, hub_error *err) {
    char snapshot_path[HUB_PATH_MAX];
    struct stat st;
    char blobs[HUB_PATH_MAX], blob[HUB_PATH_MAX], incomplete[HUB_PATH_MAX];
    if (!path_fmt(snapshot_path, sizeof snapshot_path, "%s/snapshots/%s/%s", p->repo_dir, p->commit, file) ||
        !path_fmt(blobs, sizeof blobs, "%s/blobs", p->repo_dir))
        return hub_fail(err, "%s: path too long", file);
    p->r->n_files++;
    if (stat(snapshot_path, &st) == 0 && S_ISREG(st.st_mode)) {
        /* linked in this commit already: nothing to ask (files of a commit do not change) */
        if (p->o->on_file) p->o->on_file(p->o->user, file, false, (uint64_t)st.st_size);
        return true;
    }
    hub_file_meta meta;
    if (!hub_head_file(p->o->client, p->o->repo, p->commit, file, &meta, err)) return false;
    bool ok = true;
    if (meta.commit[0] && strcasecmp(meta.commit, p->commit) != 0) {
        ok = hub_fail(err, "%s: the hub answered for commit %s, not %s", file, meta.commit, p->commit);
        goto out;
    }
    if (!path_fmt(blob, sizeof blob, "%s/%s", blobs, meta.etag) ||
        !path_fmt(incomplete, sizeof incomplete, "%s.incomplete", blob)) {
        ok = hub_fail(err, "%s: path too long", file);
        goto out;
    }
    if (!hub_mkdirs(blobs, err)) {
        ok = false;
        goto out;
    }
    bool downloaded = false;
    if (stat(blob, &st) != 0 || (uint64_t)st.st_size != meta.size_bytes) {
        int lock = lock_blob(p, meta.etag, err);
        if (lock < 0) {
            ok = false;
            goto out;
        }
        /* another process may have finished it while we waited */
        if (stat(blob, &st) != 0 || (uint64_t)st.st_size != meta.size_bytes) {
            const char *sha = hub_etag_is_sha256(meta.etag) ? meta.etag : NULL;
            ok = hub_download(p->o->client, meta.location, file, incomplete, meta.size_bytes, sha, err);
            if (ok && rename(incomplete, blob) != 0) ok = hub_fail(err, "cannot rename %s: %s", incomplete, strerror(errno));
            downloaded = ok;
        }
        close(lock);
        if (!ok) goto out;
    }
    if (!hub_snapshot_link(p->repo_dir, p->commit, file, meta.etag, err)) {
        ok = false;
        goto out;
    }
    if (downloaded) {
        p->r->n_downloaded++;
        p->r->downloaded_bytes += meta.size_bytes;
    }
    if (p->o->on_file) p->o->on_file(p->o->user, file, downloaded, meta.size_bytes);
out:
    hub_file_meta_free(&meta);
    return ok;
}

/* The shard names model.safetensors.index.json's weight_map lists, each once. */
static bool index_shards(pull *p, const char *index_file, char ***shards, size_t *n, hub_error *err) {
    char path[HUB_PATH_MAX];
    *shards = NULL;
    *n = 0;
    if (!path_fmt(path, sizeof path, "%s/snapshots/%s/%s", p->repo_dir, p->commit, index_file))
        return hub_fail(err, "%s: path too long", index_file);
    FILE *f = fopen(path, "rb");
    if (!f) return hub_fail(err, "cannot open %s: %s", path, strerror(errno));
    char *text = malloc(INDEX_MAX_BYTES + 1);
    size_t len = text ? fread(text, 1, INDEX_MAX_BYTES + 1, f) : 0;
    fclose(f);
    if (!text) return hub_fail(err, "out of memory");
    if (len > INDEX_MAX_BYTES) {
        free(text);
        return hub_fail(err, "%s: over %d MiB", index_file, INDEX_MAX_BYTES >> 20);
    }
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *map = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
    bool ok = true;
    if (!cJSON_IsObject(map)) ok = hub_fail(err, "%s: no \"weight_map\" object", index_file);
    const cJSON *entry;
    if (ok) cJSON_ArrayForEach(entry, map) {
        if (!cJSON_IsString(entry) || !hub_relative_path_valid(entry->valuestring) || strchr(entry->valuestring, '/')) {
            ok = hub_fail(err, "%s: weight_map[\"%.60s\"] is not a shard file name", index_file,
                      entry->string ? entry->string : "");
            break;
        }
        bool seen = false;
        for (size_t i = 0; i < *n && !seen; i++) seen = !strcmp((*shards)[i], entry->valuestring);
        if (seen) continue;
        if (!has_sibling(p, entry->valuestring)) {
            ok = hub_fail(err, "%s: lists %s, which the repository does not hold", index_file, entry->valuestring);
            break;
        }
        if (*n == MAX_PARTS) {
            ok = hub_fail(err, "%s: over %d shards", index_file, MAX_PARTS);
            break;
        }
        char **grown = realloc(*shards, (*n + 1) * sizeof **shards);
        if (!grown || !(grown[*n] = strdup(entry->valuestring))) {
            if (grown) *shards = grown;
            ok = hub_fail(err, "out of memory");
            break;
        }
        *shards = grown;
        (*n)++;
    }
    cJSON_Delete(root);
    if (!ok) {
        hub_free_list(*shards, *n);
        *shards = NULL;
        *n = 0;
    }
    return ok;
}

static bool pull_checkpoint(pull *p, hub_error *err) {
    if (!has_sibling(p, "config.json"))
        return hub_fail(err, "%s holds neither GGUF files nor a config.json (a safetensors checkpoint)", p->o->repo);
    bool has_index = has_sibling(p, "model.safetensors.index.json");
    if (!has_index && !has_sibling(p, "model.safetensors"))
        return hub_fail(err, "%s has a config.json but neither model.safetensors nor model.safetensors.index.json",
                    p->o->repo);
    /* config.json, generation_config.json, tokenizer*.json at the top */
    for (size_t i = 0; i < p->n_siblings; i++) {
        const char *s = p->siblings[i];
        bool wanted = !strcmp(s, "config.json") || !strcmp(s, "generation_config.json") ||
                      (!strncmp(s, "tokenizer", 9) && !strchr(s, '/') && strlen(s) > 5 && !strcmp(s + strlen(s) - 5, ".json"));
        if (wanted && !pull_file(p, s, err)) return false;
    }
    if (!has_index) return pull_file(p, "model.safetensors", err);
    if (!pull_file(p, "model.safetensors.index.json", err)) return false;
    char **shards = NULL;
    size_t n = 0;
    if (!index_shards(p, "model.safetensors.index.json", &shards, &n, err)) return false;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) ok = pull_file(p, shards[i], err);
    hub_free_list(shards, n);
    return ok;
}

static bool pull_gguf(pull *p, int chosen, hub_error *err) {
    const char *const *names = (const char *const *)p->siblings;
    size_t *parts = malloc(MAX_PARTS * sizeof *parts);
    if (!parts) return hub_fail(err, "out of memory");
    size_t n = hub_gguf_parts(names, p->n_siblings, chosen, parts, MAX_PARTS);
    bool ok = true;
    if (n == 0) ok = hub_fail(err, "%s: %s is part of a split GGUF whose %zu parts are not all in the repository",
                          p->o->repo, names[chosen], parts[0]);
    for (size_t i = 0; i < n && ok; i++) ok = pull_file(p, names[parts[i]], err);
    free(parts);
    if (ok && !path_fmt(p->r->path, sizeof p->r->path, "%s/snapshots/%s/%s", p->repo_dir, p->commit, names[chosen]))
        ok = hub_fail(err, "%s: path too long", names[chosen]);
    return ok;
}

bool hub_pull(const hub_pull_options *o, hub_pull_result *r, hub_error *err) {
    memset(r, 0, sizeof *r);
    pull p = {.o = o, .rev = o->revision && *o->revision ? o->revision : "main", .r = r};
    const char *tag = o->tag ? o->tag : "";
    if (!hub_repo_id_valid(o->repo)) return hub_fail(err, "'%s' is not a repository id like ORG/NAME", o->repo);
    if (!revision_valid(p.rev)) return hub_fail(err, "'%s' is not a branch, tag or commit name", p.rev);
    if (!hub_cache_dir(p.hub, err)) return false;
    hub_repo_dir(p.hub, o->repo, p.repo_dir);
    if (!read_revision(&p, err)) {
        hub_free_list(p.siblings, p.n_siblings);
        return false;
    }
    memcpy(r->commit, p.commit, sizeof r->commit);
    const char *const *names = (const char *const *)p.siblings;
    int chosen = hub_gguf_choose(names, p.n_siblings, tag);
    bool ok;
    if (chosen >= 0) {
        ok = pull_gguf(&p, chosen, err);
    } else if (*tag) {
        char tags[400];
        hub_gguf_tags(names, p.n_siblings, tags, sizeof tags);
        if (*tags) ok = hub_fail(err, "%s has no GGUF tagged %s (tags: %s)", o->repo, tag, tags);
        else ok = hub_fail(err, "%s holds no GGUF files, so a tag (:%s) names nothing; pull it without one", o->repo, tag);
    } else {
        ok = pull_checkpoint(&p, err);
        if (ok && !path_fmt(r->path, sizeof r->path, "%s/snapshots/%s", p.repo_dir, p.commit))
            ok = hub_fail(err, "%s: path too long", p.repo_dir);
    }
    /* a branch or tag name gets its ref; a commit is its own name */
    if (ok && !hub_commit_valid(p.rev)) ok = hub_ref_write(p.repo_dir, p.rev, p.commit, err);
    hub_free_list(p.siblings, p.n_siblings);
    return ok;
}
