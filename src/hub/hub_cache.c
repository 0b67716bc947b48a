/*
 * hub_cache.c — the Hugging Face cache on disk, without the network: where
 * it is, its refs and snapshot links, and what -m ORG/NAME[:TAG] names in
 * it (hub_resolve_cached). The layout is huggingface_hub's (see hub.h), so
 * files pulled by either tool are found by the other.
 */
#include "hub/hub.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { LIST_MAX_FILES = 4096, LIST_MAX_DEPTH = 16 };

/* snprintf into a path buffer; false when it does not fit. */
static bool path_join(char out[HUB_PATH_MAX], const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool path_join(char out[HUB_PATH_MAX], const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, HUB_PATH_MAX, fmt, ap);
    va_end(ap);
    return n >= 0 && n < HUB_PATH_MAX;
}

static const char *env_nonempty(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

bool hub_cache_dir(char out[HUB_PATH_MAX], hub_error *err) {
    const char *v;
    bool fits;
    /* huggingface_hub's order: HF_HUB_CACHE (and its old name), else
     * HF_HOME/hub, HF_HOME defaulting to $XDG_CACHE_HOME/huggingface or
     * ~/.cache/huggingface */
    if ((v = env_nonempty("HF_HUB_CACHE")) || (v = env_nonempty("HUGGINGFACE_HUB_CACHE"))) fits = path_join(out, "%s", v);
    else if ((v = env_nonempty("HF_HOME"))) fits = path_join(out, "%s/hub", v);
    else if ((v = env_nonempty("XDG_CACHE_HOME"))) fits = path_join(out, "%s/huggingface/hub", v);
    else if ((v = env_nonempty("HOME"))) fits = path_join(out, "%s/.cache/huggingface/hub", v);
    else return hub_fail(err, "no cache folder: set HF_HOME or HOME");
    if (!fits) return hub_fail(err, "the cache folder's path is too long");
    return true;
}

void hub_repo_dir(const char *hub, const char *repo, char out[HUB_PATH_MAX]) {
    /* models--ORG--NAME: the one '/' of a valid id becomes "--" */
    int n = snprintf(out, HUB_PATH_MAX, "%s/models--", hub);
    for (const char *p = repo; *p && n + 3 < HUB_PATH_MAX; p++) {
        if (*p == '/') {
            out[n++] = '-';
            out[n++] = '-';
        } else {
            out[n++] = *p;
        }
    }
    out[n] = 0;
}

bool hub_mkdirs(const char *dir, hub_error *err) {
    char path[HUB_PATH_MAX];
    if (!path_join(path, "%s", dir)) return hub_fail(err, "path too long: %s", dir);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p) continue;
        char saved = *p;
        *p = 0;
        if (mkdir(path, 0777) != 0 && errno != EEXIST) return hub_fail(err, "cannot create %s: %s", path, strerror(errno));
        *p = saved;
        if (!saved) return true;
    }
}

bool hub_ref_read(const char *repo_dir, const char *rev, char commit[HUB_COMMIT_LEN + 1]) {
    char path[HUB_PATH_MAX], text[64];
    if (!path_join(path, "%s/refs/%s", repo_dir, rev)) return false;
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' ')) n--;
    text[n] = 0;
    if (!hub_commit_valid(text)) return false;
    memcpy(commit, text, HUB_COMMIT_LEN + 1);
    return true;
}

bool hub_ref_write(const char *repo_dir, const char *rev, const char *commit, hub_error *err) {
    char path[HUB_PATH_MAX], tmp[HUB_PATH_MAX], dir[HUB_PATH_MAX];
    if (!path_join(path, "%s/refs/%s", repo_dir, rev) || !path_join(tmp, "%s.%ld.tmp", path, (long)getpid()))
        return hub_fail(err, "path too long: %s/refs/%s", repo_dir, rev);
    memcpy(dir, path, sizeof dir);
    *strrchr(dir, '/') = 0;
    if (!hub_mkdirs(dir, err)) return false;
    FILE *f = fopen(tmp, "wb");
    if (!f) return hub_fail(err, "cannot write %s: %s", tmp, strerror(errno));
    bool ok = fputs(commit, f) >= 0;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return hub_fail(err, "cannot write %s: %s", path, strerror(e));
    }
    return true;
}

typedef struct file_list {
    char **paths;
    size_t n, cap;
} file_list;

static bool list_push(file_list *l, const char *path, hub_error *err) {
    if (l->n == LIST_MAX_FILES) return hub_fail(err, "more than %d files below the snapshot", LIST_MAX_FILES);
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        char **grown = realloc(l->paths, cap * sizeof *grown);
        if (!grown) return hub_fail(err, "out of memory");
        l->paths = grown;
        l->cap = cap;
    }
    if (!(l->paths[l->n] = strdup(path))) return hub_fail(err, "out of memory");
    l->n++;
    return true;
}

/* Appends the files below root/relative ("" = root itself). */
static bool list_below(const char *root, const char *relative, int depth, file_list *l, hub_error *err) {
    char dir_path[HUB_PATH_MAX];
    if (!path_join(dir_path, "%s%s%s", root, *relative ? "/" : "", relative)) return hub_fail(err, "path too long below %s", root);
    DIR *d = opendir(dir_path);
    if (!d) return hub_fail(err, "cannot read %s: %s", dir_path, strerror(errno));
    bool ok = true;
    struct dirent *e;
    while (ok && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char rel[HUB_PATH_MAX], full[HUB_PATH_MAX];
        struct stat st;
        if (!path_join(rel, "%s%s%s", relative, *relative ? "/" : "", e->d_name) ||
            !path_join(full, "%s/%s", root, rel)) {
            ok = hub_fail(err, "path too long below %s", root);
        } else if (lstat(full, &st) != 0) {
            continue; /* vanished meanwhile */
        } else if (S_ISDIR(st.st_mode)) {
            if (depth + 1 >= LIST_MAX_DEPTH) ok = hub_fail(err, "folders nested too deep below %s", root);
            else ok = list_below(root, rel, depth + 1, l, err);
        } else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
            ok = list_push(l, rel, err);
        }
    }
    closedir(d);
    return ok;
}

static int compare_paths(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

bool hub_list_files(const char *dir, char ***paths, size_t *n, hub_error *err) {
    file_list l = {0};
    if (!list_below(dir, "", 0, &l, err)) {
        hub_free_list(l.paths, l.n);
        return false;
    }
    if (l.n) qsort(l.paths, l.n, sizeof *l.paths, compare_paths);
    *paths = l.paths;
    *n = l.n;
    return true;
}

void hub_free_list(char **paths, size_t n) {
    for (size_t i = 0; i < n; i++) free(paths[i]);
    free(paths);
}

bool hub_snapshot_link(const char *repo_dir, const char *commit, const char *file, const char *etag,
                       hub_error *err) {
    char link_path[HUB_PATH_MAX], target[HUB_PATH_MAX], dir[HUB_PATH_MAX];
    if (!path_join(link_path, "%s/snapshots/%s/%s", repo_dir, commit, file))
        return hub_fail(err, "path too long: snapshots/%s/%s", commit, file);
    memcpy(dir, link_path, sizeof dir);
    *strrchr(dir, '/') = 0;
    if (!hub_mkdirs(dir, err)) return false;
    /* ../../blobs/ETAG from snapshots/COMMIT/, one more ../ per folder of file */
    size_t used = 0;
    target[0] = 0;
    for (const char *p = file; *p; p++)
        if (*p == '/') used += (size_t)snprintf(target + used, sizeof target - used, "../");
    if (!path_join(target + used, "../../blobs/%s", etag)) return hub_fail(err, "path too long: %s", file);
    unlink(link_path); /* as huggingface_hub: the link is remade */
    if (symlink(target, link_path) != 0) return hub_fail(err, "cannot link %s: %s", link_path, strerror(errno));
    return true;
}

bool hub_resolve_cached(const char *repo, const char *tag, char **path, hub_error *err) {
    char hub[HUB_PATH_MAX], repo_dir[HUB_PATH_MAX], snapshot[HUB_PATH_MAX];
    char commit[HUB_COMMIT_LEN + 1];
    const char *colon = tag && *tag ? ":" : "";
    if (!tag) tag = "";
    if (!hub_cache_dir(hub, err)) return false;
    hub_repo_dir(hub, repo, repo_dir);
    if (!hub_ref_read(repo_dir, "main", commit))
        return hub_fail(err, "%s%s%s is no file here and not in the Hugging Face cache (%s); run: inferno pull %s%s%s", repo,
                    colon, tag, hub, repo, colon, tag);
    struct stat st;
    if (!path_join(snapshot, "%s/snapshots/%s", repo_dir, commit)) return hub_fail(err, "path too long: %s", repo_dir);
    if (stat(snapshot, &st) != 0 || !S_ISDIR(st.st_mode))
        return hub_fail(err, "%s: the cache's refs/main names commit %s, whose snapshot is missing; run: inferno pull %s%s%s",
                    repo, commit, repo, colon, tag);
    char **files;
    size_t n;
    if (!hub_list_files(snapshot, &files, &n, err)) return false;
    const char *const *names = (const char *const *)files;
    int chosen = hub_gguf_choose(names, n, tag);
    bool ok = true;
    char found[HUB_PATH_MAX];
    if (chosen >= 0) {
        /* a split GGUF: its first part, which the loader opens with the
         * others beside it (io/gguf_split.c), once every part is here */
        size_t *parts = malloc(n * sizeof *parts), n_parts = parts ? hub_gguf_parts(names, n, chosen, parts, n) : 0;
        char part[HUB_PATH_MAX];
        if (!parts)
            ok = hub_fail(err, "out of memory");
        else if (n_parts == 0)
            ok = hub_fail(err, "%s%s%s: the cache holds only some of the %zu parts of %s; run: inferno pull %s%s%s", repo,
                          colon, tag, parts[0], files[chosen], repo, colon, tag);
        else if (!path_join(found, "%s/%s", snapshot, files[chosen]))
            ok = hub_fail(err, "%s: cannot use %s", repo, files[chosen]);
        for (size_t i = 0; ok && i < n_parts; i++)
            if (!path_join(part, "%s/%s", snapshot, files[parts[i]]) || stat(part, &st) != 0)
                ok = hub_fail(err, "%s: %s in the cache points to a missing blob; run: inferno pull %s%s%s", repo,
                              files[parts[i]], repo, colon, tag);
        free(parts);
    } else if (*tag) {
        char tags[256];
        hub_gguf_tags(names, n, tags, sizeof tags);
        if (*tags)
            ok = hub_fail(err, "%s has no GGUF tagged %s in the cache (cached: %s); run: inferno pull %s:%s", repo, tag, tags,
                      repo, tag);
        else
            ok = hub_fail(err, "%s in the cache holds no GGUF for the tag %s; run: inferno pull %s:%s", repo, tag, repo, tag);
    } else {
        char config[HUB_PATH_MAX];
        if (path_join(config, "%s/config.json", snapshot) && stat(config, &st) == 0) memcpy(found, snapshot, sizeof found);
        else ok = hub_fail(err, "%s in the cache holds neither a GGUF nor a config.json; run: inferno pull %s", repo, repo);
    }
    hub_free_list(files, n);
    if (!ok) return false;
    if (!(*path = strdup(found))) return hub_fail(err, "out of memory");
    return true;
}
