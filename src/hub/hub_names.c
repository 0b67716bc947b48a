/*
 * hub_names.c — the names the hub deals in, checked and taken apart without
 * touching the disk or the network: repository ids, ORG/NAME:TAG specs,
 * file paths, commits and etags, GGUF file names (quant tag, split parts)
 * with the choice of file a tag names, as llama.cpp's -hf makes it, and the
 * API's answer for a revision (its commit and file names).
 */
#include "hub/hub.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool is_word_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

bool hub_repo_id_valid(const char *repo) {
    size_t len = strlen(repo);
    if (len == 0 || len >= HUB_REPO_MAX) return false;
    int slashes = 0;
    bool after_punct = true; /* no punctuation first, or twice in a row */
    for (const char *p = repo; *p; p++) {
        if (is_word_char(*p)) {
            after_punct = false;
        } else if (*p == '/' || *p == '.' || *p == '-') {
            if (after_punct) return false;
            slashes += *p == '/';
            after_punct = true;
        } else {
            return false;
        }
    }
    return !after_punct && slashes == 1;
}

bool hub_parse_spec(const char *spec, char repo[HUB_REPO_MAX], char tag[HUB_TAG_MAX]) {
    const char *colon = strchr(spec, ':');
    size_t repo_len = colon ? (size_t)(colon - spec) : strlen(spec);
    if (repo_len == 0 || repo_len >= HUB_REPO_MAX) return false;
    memcpy(repo, spec, repo_len);
    repo[repo_len] = 0;
    tag[0] = 0;
    if (!hub_repo_id_valid(repo)) return false;
    if (!colon) return true;
    const char *t = colon + 1;
    size_t tag_len = strlen(t);
    if (tag_len == 0 || tag_len >= HUB_TAG_MAX) return false;
    for (const char *p = t; *p; p++)
        if (!is_word_char(*p)) return false;
    memcpy(tag, t, tag_len + 1);
    return true;
}

bool hub_relative_path_valid(const char *path) {
    size_t len = strlen(path);
    if (len == 0 || len > HUB_PATH_MAX / 4 || path[0] == '/') return false;
    const char *component = path;
    for (const char *p = path;; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '/' || c == 0) {
            size_t n = (size_t)(p - component);
            if (n == 0 || (n == 1 && component[0] == '.') || (n == 2 && component[0] == '.' && component[1] == '.'))
                return false;
            if (c == 0) return true;
            component = p + 1;
        } else if (c < 0x20 || c == 0x7f || c == '\\') {
            return false;
        }
    }
}

static bool is_hex(const char *s, size_t want_len) {
    size_t n = 0;
    for (; s[n]; n++)
        if (!isxdigit((unsigned char)s[n])) return false;
    return n == want_len;
}

bool hub_commit_valid(const char *s) { return is_hex(s, HUB_COMMIT_LEN); }

bool hub_etag_is_sha256(const char *s) { return is_hex(s, 64); }

bool hub_etag_valid(const char *s) {
    size_t n = 0;
    for (; s[n]; n++)
        if (!is_word_char(s[n]) && s[n] != '-') return false;
    return n > 0 && n < HUB_ETAG_MAX;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !memcmp(s + n - m, suffix, m);
}

static bool all_digits(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i])) return false;
    return true;
}

bool hub_gguf_name_parse(const char *path, hub_gguf_name *out) {
    if (!ends_with(path, ".gguf")) return false;
    size_t len = strlen(path) - 5;
    if (len >= sizeof out->prefix) return false;
    memcpy(out->prefix, path, len);
    out->prefix[len] = 0;
    out->index = out->count = 1;
    out->tag[0] = 0;
    /* -NNNNN-of-NNNNN (llama.cpp's split names, case-insensitive "of") */
    const size_t split_len = 15; /* "-00001-of-00003" */
    char *s = out->prefix + len - split_len;
    if (len > split_len && s[0] == '-' && all_digits(s + 1, 5) && s[6] == '-' && tolower((unsigned char)s[7]) == 'o' &&
        tolower((unsigned char)s[8]) == 'f' && s[9] == '-' && all_digits(s + 10, 5)) {
        out->index = atoi(s + 1);
        out->count = atoi(s + 10);
        *s = 0;
        len -= split_len;
    }
    /* the trailing run of word characters after a '-' or '.' */
    size_t start = len;
    while (start > 0 && is_word_char(out->prefix[start - 1])) start--;
    if (start < len && start > 0 && (out->prefix[start - 1] == '-' || out->prefix[start - 1] == '.') &&
        len - start < sizeof out->tag) {
        for (size_t i = start; i < len; i++) out->tag[i - start] = (char)toupper((unsigned char)out->prefix[i]);
        out->tag[len - start] = 0;
    }
    return true;
}

bool hub_gguf_is_model(const char *path) {
    if (!ends_with(path, ".gguf")) return false;
    const char *slash = strrchr(path, '/');
    const char *file = slash ? slash + 1 : path;
    static const char *const side_files[] = {"mmproj", "imatrix", "mtp-", "eagle3-", "dflash-", "dspark-"};
    for (size_t i = 0; i < sizeof side_files / sizeof side_files[0]; i++)
        if (strstr(file, side_files[i])) return false;
    return true;
}

/* path holds tag followed by '.' or '-', ignoring case (llama.cpp's
 * regex "TAG[.-]"; a tag is word characters only, so it is literal). */
static bool names_tag(const char *path, const char *tag) {
    size_t n = strlen(tag);
    for (const char *p = path; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] && tolower((unsigned char)p[i]) == tolower((unsigned char)tag[i])) i++;
        if (i == n && (p[n] == '.' || p[n] == '-')) return true;
    }
    return false;
}

static bool is_first_part(const char *path) {
    hub_gguf_name name;
    return hub_gguf_name_parse(path, &name) && (name.count <= 1 || name.index == 1);
}

int hub_gguf_choose(const char *const *paths, size_t n, const char *tag) {
    static const char *const default_tags[] = {"Q4_K_M", "Q8_0"};
    const char *const *tags = default_tags;
    size_t n_tags = 2;
    if (tag && *tag) {
        tags = &tag;
        n_tags = 1;
    }
    for (size_t t = 0; t < n_tags; t++) {
        /* a file whose own tag is this one first (so F16 is not BF16), then
         * llama.cpp's rule: the tag anywhere in the path, then '.' or '-' */
        for (size_t i = 0; i < n; i++) {
            hub_gguf_name name;
            if (hub_gguf_is_model(paths[i]) && hub_gguf_name_parse(paths[i], &name) &&
                !strcasecmp(name.tag, tags[t]) && (name.count <= 1 || name.index == 1))
                return (int)i;
        }
        for (size_t i = 0; i < n; i++)
            if (hub_gguf_is_model(paths[i]) && names_tag(paths[i], tags[t]) && is_first_part(paths[i])) return (int)i;
    }
    if (tag && *tag) return -1;
    for (size_t i = 0; i < n; i++)
        if (hub_gguf_is_model(paths[i]) && is_first_part(paths[i])) return (int)i;
    return -1;
}

size_t hub_gguf_parts(const char *const *paths, size_t n, int chosen, size_t *out, size_t cap) {
    hub_gguf_name want, name;
    if (chosen < 0 || (size_t)chosen >= n || cap == 0 || !hub_gguf_name_parse(paths[chosen], &want)) return 0;
    if (want.count <= 1) {
        out[0] = (size_t)chosen;
        return 1;
    }
    out[0] = (size_t)want.count;
    if ((size_t)want.count > cap) return 0;
    for (int part = 1; part <= want.count; part++) {
        size_t found = n;
        for (size_t i = 0; i < n && found == n; i++)
            if (hub_gguf_name_parse(paths[i], &name) && name.count == want.count && name.index == part &&
                !strcmp(name.prefix, want.prefix))
                found = i;
        if (found == n) {
            out[0] = (size_t)want.count;
            return 0;
        }
        out[part - 1] = found;
    }
    return (size_t)want.count;
}

void hub_gguf_tags(const char *const *paths, size_t n, char *out, size_t cap) {
    size_t used = 0;
    if (cap) out[0] = 0;
    for (size_t i = 0; i < n; i++) {
        hub_gguf_name name;
        if (!hub_gguf_is_model(paths[i]) || !hub_gguf_name_parse(paths[i], &name) || !name.tag[0]) continue;
        if (name.count > 1 && name.index != 1) continue;
        bool seen = false; /* already listed: earlier files with the same tag */
        for (size_t j = 0; j < i && !seen; j++) {
            hub_gguf_name other;
            seen = hub_gguf_is_model(paths[j]) && hub_gguf_name_parse(paths[j], &other) &&
                   !strcmp(other.tag, name.tag);
        }
        if (seen) continue;
        int w = snprintf(out + used, cap > used ? cap - used : 0, "%s%s", used ? ", " : "", name.tag);
        if (w < 0 || (size_t)w >= cap - used) break;
        used += (size_t)w;
    }
}

bool hub_fail(hub_error *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    for (char *c = err->msg; *c; c++) /* one line, whatever the names held */
        if ((unsigned char)*c < 0x20) *c = ' ';
    return false;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

bool hub_revision_parse(const char *json, size_t len, char commit[HUB_COMMIT_LEN + 1], char ***names, size_t *n,
                        hub_error *err) {
    *names = NULL;
    *n = 0;
    cJSON *root = cJSON_ParseWithLength(json, len);
    const cJSON *sha = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "sha") : NULL;
    const cJSON *siblings = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "siblings") : NULL;
    bool ok = true;
    if (!cJSON_IsObject(root)) ok = hub_fail(err, "not a JSON object");
    else if (!cJSON_IsString(sha) || !hub_commit_valid(sha->valuestring)) ok = hub_fail(err, "no 40-digit commit in \"sha\"");
    else if (!cJSON_IsArray(siblings)) ok = hub_fail(err, "no \"siblings\" array");
    else if (cJSON_GetArraySize(siblings) > HUB_MAX_SIBLINGS) ok = hub_fail(err, "over %d files", HUB_MAX_SIBLINGS);
    char **list = NULL;
    size_t count = 0;
    if (ok) {
        for (int i = 0; i < HUB_COMMIT_LEN; i++) commit[i] = (char)tolower((unsigned char)sha->valuestring[i]);
        commit[HUB_COMMIT_LEN] = 0;
        int cap = cJSON_GetArraySize(siblings);
        if (!(list = calloc(cap > 0 ? (size_t)cap : 1, sizeof *list))) ok = hub_fail(err, "out of memory");
        const cJSON *s;
        cJSON_ArrayForEach(s, siblings) {
            if (!ok) break;
            const cJSON *name = cJSON_IsObject(s) ? cJSON_GetObjectItemCaseSensitive(s, "rfilename") : NULL;
            if (!cJSON_IsString(name)) ok = hub_fail(err, "siblings[%zu] has no \"rfilename\" string", count);
            else if (!hub_relative_path_valid(name->valuestring))
                ok = hub_fail(err, "siblings[%zu].rfilename '%.100s' is not a safe relative path", count, name->valuestring);
            else if (!(list[count] = strdup(name->valuestring))) ok = hub_fail(err, "out of memory");
            else count++;
        }
    }
    cJSON_Delete(root);
    if (!ok) {
        for (size_t i = 0; i < count; i++) free(list[i]);
        free(list);
        return false;
    }
    /* sorted, as the hub's tree listing: the first match of a tag is then the same everywhere */
    if (count > 1) qsort(list, count, sizeof *list, compare_names);
    *names = list;
    *n = count;
    return true;
}
