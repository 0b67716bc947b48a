/*
 * fuzz_hub.c — libFuzzer target for what `inferno pull` reads from the hub
 * before anything touches the disk: the API's revision answer
 * (hub_revision_parse) and the names in it (specs, relative paths, GGUF
 * file names, the file a tag picks, split parts, the tag list).
 *
 * An input whose first byte is even is a revision JSON (the rest); odd, a
 * list of names, one a line. What parses must keep the promises hub.h
 * makes: a lower-case 40-digit commit, sorted safe names, a chosen file
 * that is a model GGUF and a first part, parts that are one split group in
 * order. Errors are fine; crashes, leaks, undefined behaviour and broken
 * promises abort.
 *
 * Build and run: scripts/fuzz.sh fuzz_hub (seeds: tests/fuzz/corpus/fuzz_hub/).
 */
#include "fuzz_common.h"

#include "hub/hub.h"

#include <ctype.h>
#include <stdint.h>
#include <string.h>

enum { MAX_LINES = 256 };

static void check_choice(const char *const *names, size_t n, const char *tag) {
    int chosen = hub_gguf_choose(names, n, tag);
    FUZZ_CHECK(chosen >= -1 && chosen < (int)n, "choice %d of %zu", chosen, n);
    if (chosen < 0) return;
    hub_gguf_name name, part_name;
    FUZZ_CHECK(hub_gguf_is_model(names[chosen]) && hub_gguf_name_parse(names[chosen], &name),
               "'%s' is not a model GGUF", names[chosen]);
    FUZZ_CHECK(name.count <= 1 || name.index == 1, "'%s' is not a first part", names[chosen]);
    size_t parts[64];
    size_t n_parts = hub_gguf_parts(names, n, chosen, parts, 64);
    for (size_t i = 0; i < n_parts; i++) {
        FUZZ_CHECK(parts[i] < n && hub_gguf_name_parse(names[parts[i]], &part_name), "part %zu", i);
        FUZZ_CHECK(n_parts == 1 || (part_name.index == (int)i + 1 && part_name.count == name.count &&
                                    !strcmp(part_name.prefix, name.prefix)),
                   "part %zu is '%s'", i, names[parts[i]]);
    }
    char tags[256];
    hub_gguf_tags(names, n, tags, sizeof tags);
    FUZZ_CHECK(strlen(tags) < sizeof tags, "tags overflow");
}

static void fuzz_revision(const char *json, size_t len) {
    char commit[HUB_COMMIT_LEN + 1];
    char **names;
    size_t n;
    hub_error err = {{0}};
    if (!hub_revision_parse(json, len, commit, &names, &n, &err)) {
        FUZZ_CHECK(err.msg[0] && !strchr(err.msg, '\n'), "an error without a one-line message");
        return;
    }
    FUZZ_CHECK(hub_commit_valid(commit), "commit '%s'", commit);
    for (const char *c = commit; *c; c++) FUZZ_CHECK(!isupper((unsigned char)*c), "commit '%s' not lower-case", commit);
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(hub_relative_path_valid(names[i]), "unsafe name '%s'", names[i]);
        FUZZ_CHECK(i == 0 || strcmp(names[i - 1], names[i]) <= 0, "names not sorted");
    }
    const char *const *list = (const char *const *)names;
    check_choice(list, n, "");
    check_choice(list, n, "Q8_0");
    check_choice(list, n, "q4_k_m");
    hub_free_list(names, n);
}

static void fuzz_names(const char *text, size_t len) {
    static char buf[1 << 16];
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, text, len);
    buf[len] = 0;
    const char *lines[MAX_LINES];
    size_t n = 0;
    for (char *line = buf, *next; line && n < MAX_LINES; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        lines[n++] = line;
        char repo[HUB_REPO_MAX], tag[HUB_TAG_MAX];
        if (hub_parse_spec(line, repo, tag)) {
            FUZZ_CHECK(hub_repo_id_valid(repo) && strchr(repo, '/'), "repo '%s' of '%s'", repo, line);
            for (const char *c = tag; *c; c++) FUZZ_CHECK(isalnum((unsigned char)*c) || *c == '_', "tag '%s'", tag);
        }
        if (hub_relative_path_valid(line))
            FUZZ_CHECK(line[0] != '/' && !strstr(line, "//") && strcmp(line, "..") && strncmp(line, "../", 3),
                       "'%s' accepted", line);
        hub_gguf_name name;
        if (hub_gguf_name_parse(line, &name)) {
            FUZZ_CHECK(name.index >= 0 && name.count >= 0 && strlen(name.prefix) < strlen(line), "'%s'", line);
            for (const char *c = name.tag; *c; c++)
                FUZZ_CHECK(!islower((unsigned char)*c) && (isalnum((unsigned char)*c) || *c == '_'), "tag of '%s'", line);
        }
    }
    /* the first line as a tag over the rest */
    char tag[HUB_TAG_MAX] = "";
    bool word = n > 0 && strlen(lines[0]) < sizeof tag;
    for (const char *c = n ? lines[0] : ""; word && *c; c++) word = isalnum((unsigned char)*c) || *c == '_';
    if (word) strcpy(tag, lines[0]);
    if (n > 1) check_choice(lines + 1, n - 1, tag);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    if (data[0] % 2 == 0) fuzz_revision((const char *)data + 1, size - 1);
    else fuzz_names((const char *)data + 1, size - 1);
    return 0;
}
