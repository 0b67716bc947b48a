/*
 * test_hub.c — the pieces of the hub client that need no network:
 *
 *   sha256     NIST's FIPS 180-4 examples ("abc", the empty message, the
 *              448- and 896-bit messages, a million 'a') and the same digests
 *              fed in every split of the input, so block boundaries in
 *              hub_sha256_update are covered;
 *   specs      ORG/NAME[:TAG] accepted and refused as llama.cpp's -hf does
 *              (one slash, no doubled or edge punctuation);
 *   paths      names from the hub that would leave the snapshot refused;
 *   gguf       tags read from file names, split parts, the file a tag picks
 *              (case-insensitive, a file's own tag first, else TAG followed
 *              by '.' or '-' anywhere, as -hf; the default
 *              Q4_K_M then Q8_0 then the first, side files skipped, split
 *              files by their first part) and the list of tags;
 *   revision   the API's answer: commit and sorted names, and each way it
 *              can be malformed refused with a message naming the field;
 *   cache      hub_resolve_cached over a hand-made cache: a cached GGUF, a
 *              tag not cached, a repository not pulled, a safetensors
 *              snapshot folder.
 */
#include "harness.h"

#include "hub/hub.h"
#include "hub/sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void digest_of(const void *data, size_t len, char hex[65]) {
    hub_sha256 h;
    hub_sha256_init(&h);
    hub_sha256_update(&h, data, len);
    hub_sha256_final_hex(&h, hex);
}

static void test_sha256(void) {
    test_begin("sha256");
    static const struct {
        const char *message, *digest;
    } nist[] = {
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrst"
         "nopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    char hex[65];
    for (size_t i = 0; i < sizeof nist / sizeof nist[0]; i++) {
        size_t len = strlen(nist[i].message);
        digest_of(nist[i].message, len, hex);
        TEST_CHECK(!strcmp(hex, nist[i].digest), "sha256(\"%.20s...\") = %s", nist[i].message, hex);
        /* the same message in two pieces, split at every byte */
        bool all_splits = true;
        for (size_t cut = 0; cut <= len; cut++) {
            hub_sha256 h;
            hub_sha256_init(&h);
            hub_sha256_update(&h, nist[i].message, cut);
            hub_sha256_update(&h, nist[i].message + cut, len - cut);
            hub_sha256_final_hex(&h, hex);
            all_splits = all_splits && !strcmp(hex, nist[i].digest);
        }
        TEST_CHECK(all_splits, "sha256 of message %zu split in two pieces", i);
    }
    /* a million 'a', fed in pieces of 1000 */
    char block[1000];
    memset(block, 'a', sizeof block);
    hub_sha256 h;
    hub_sha256_init(&h);
    for (int i = 0; i < 1000; i++) hub_sha256_update(&h, block, sizeof block);
    hub_sha256_final_hex(&h, hex);
    TEST_CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
               "sha256(a million 'a') = %s", hex);
    /* lengths around the padding boundary (55, 56, 63, 64 bytes) against one-shot hashing, fed bytewise */
    bool bytewise = true;
    for (size_t len = 50; len <= 130; len++) {
        char one_shot[65];
        digest_of(block, len, one_shot);
        hub_sha256_init(&h);
        for (size_t i = 0; i < len; i++) hub_sha256_update(&h, block + i, 1);
        hub_sha256_final_hex(&h, hex);
        bytewise = bytewise && !strcmp(hex, one_shot);
    }
    TEST_CHECK(bytewise, "sha256 fed a byte at a time matches one call");
}

static void test_specs(void) {
    test_begin("specs");
    char repo[HUB_REPO_MAX], tag[HUB_TAG_MAX];
    TEST_CHECK(hub_parse_spec("Qwen/Qwen3-0.6B-GGUF", repo, tag) && !strcmp(repo, "Qwen/Qwen3-0.6B-GGUF") && !*tag,
               "ORG/NAME");
    TEST_CHECK(hub_parse_spec("Qwen/Qwen3-0.6B-GGUF:q8_0", repo, tag) && !strcmp(tag, "q8_0"), "ORG/NAME:tag, case kept");
    TEST_CHECK(hub_parse_spec("unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL", repo, tag) == false, "a '-' in a tag is refused");
    static const char *const refused[] = {"Qwen3-0.6B.gguf", "a/b/c", "/abs/path", "./x/y", "a//b", "a/.b", "a/b.",
                                          "-a/b", "a/b:", "a/b:Q8 0", "a b/c", "a/b:Q8_0:x", "", ":Q8_0", "../x"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        TEST_CHECK(!hub_parse_spec(refused[i], repo, tag), "'%s' is not a spec", refused[i]);
    TEST_CHECK(hub_repo_id_valid("a_b/c.d-e"), "underscores, dots and dashes");
    TEST_CHECK(hub_commit_valid("0123456789abcdef0123456789abcdef01234567"), "a commit");
    TEST_CHECK(!hub_commit_valid("0123456789abcdef0123456789abcdef0123456"), "39 digits");
    TEST_CHECK(hub_etag_is_sha256("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "sha256 etag");
    TEST_CHECK(hub_etag_valid("abc-123_x") && !hub_etag_valid("../x") && !hub_etag_valid("") && !hub_etag_valid("a/b"),
               "etags usable as blob names");
}

static void test_paths(void) {
    test_begin("paths");
    static const char *const fine[] = {"model.gguf", "Q8_0/model-00001-of-00002.gguf", ".gitattributes", "a/b/c.json",
                                       "名前.gguf"};
    static const char *const refused[] = {"", "/etc/passwd", "../x", "a/../../x", "a/./b", "a//b", "a/", "a\\b",
                                          "a\nb", "..", "."};
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++)
        TEST_CHECK(hub_relative_path_valid(fine[i]), "'%s' is a safe name", fine[i]);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        TEST_CHECK(!hub_relative_path_valid(refused[i]), "'%s' is refused", refused[i]);
}

static void test_gguf(void) {
    test_begin("gguf");
    hub_gguf_name n;
    TEST_CHECK(hub_gguf_name_parse("Qwen3-0.6B-Q8_0.gguf", &n) && !strcmp(n.tag, "Q8_0") && n.count == 1 &&
                   !strcmp(n.prefix, "Qwen3-0.6B-Q8_0"),
               "plain: tag %s", n.tag);
    TEST_CHECK(hub_gguf_name_parse("Q4_K_M/Qwen3-32B-q4_k_m-00002-of-00003.gguf", &n) && !strcmp(n.tag, "Q4_K_M") &&
                   n.index == 2 && n.count == 3 && !strcmp(n.prefix, "Q4_K_M/Qwen3-32B-q4_k_m"),
               "split: tag %s, %d of %d", n.tag, n.index, n.count);
    TEST_CHECK(hub_gguf_name_parse("qwen3.bf16.gguf", &n) && !strcmp(n.tag, "BF16"), "a '.' before the tag");
    TEST_CHECK(hub_gguf_name_parse("model.gguf", &n) && !*n.tag, "no tag");
    TEST_CHECK(!hub_gguf_name_parse("model.safetensors", &n), "not a GGUF");

    static const char *const repo[] = {
        "Qwen3-8B-BF16.gguf",
        "Qwen3-8B-Q4_K_M.gguf",
        "Qwen3-8B-Q8_0.gguf",
        "README.md",
        "UD-Q4_K_XL/Qwen3-8B-UD-Q4_K_XL-00001-of-00002.gguf",
        "UD-Q4_K_XL/Qwen3-8B-UD-Q4_K_XL-00002-of-00002.gguf",
        "mmproj-Qwen3-8B-F16.gguf",
    };
    size_t n_repo = sizeof repo / sizeof repo[0];
    TEST_CHECK(hub_gguf_choose(repo, n_repo, "q8_0") == 2, "a tag in lower case");
    TEST_CHECK(hub_gguf_choose(repo, n_repo, "") == 1, "the default is Q4_K_M");
    TEST_CHECK(hub_gguf_choose(repo, n_repo, "Q4_K") == -1, "Q4_K is not Q4_K_M (TAG then '.' or '-')");
    TEST_CHECK(hub_gguf_choose(repo, n_repo, "F16") == 0, "F16: the projector is no model; BF16 holds 'F16.' (-hf's rule)");
    static const char *const both[] = {"a-BF16.gguf", "a-F16.gguf"};
    TEST_CHECK(hub_gguf_choose(both, 2, "f16") == 1, "a file whose own tag is F16 wins over BF16");
    TEST_CHECK(hub_gguf_choose(repo, n_repo, "UD") == 4, "a split file by its first part (the folder names the tag)");
    TEST_CHECK(hub_gguf_choose(repo, n_repo, "Q4_K_XL") == 4, "a split file by its file name's tag");
    size_t parts[4];
    TEST_CHECK(hub_gguf_parts(repo, n_repo, 4, parts, 4) == 2 && parts[0] == 4 && parts[1] == 5, "both parts, in order");
    TEST_CHECK(hub_gguf_parts(repo, n_repo - 2, 4, parts, 4) == 0 && parts[0] == 2, "a missing part");
    static const char *const no_default[] = {"a-F16.gguf", "b-Q6_K.gguf"};
    TEST_CHECK(hub_gguf_choose(no_default, 2, NULL) == 0, "no Q4_K_M or Q8_0: the first");
    static const char *const q8_only[] = {"a-F16.gguf", "b-Q8_0.gguf"};
    TEST_CHECK(hub_gguf_choose(q8_only, 2, NULL) == 1, "no Q4_K_M: Q8_0");
    char tags[128];
    hub_gguf_tags(repo, n_repo, tags, sizeof tags);
    TEST_CHECK(!strcmp(tags, "BF16, Q4_K_M, Q8_0, Q4_K_XL"), "tags: %s", tags);
    TEST_CHECK(!hub_gguf_is_model("x/mmproj-model-f16.gguf") && !hub_gguf_is_model("imatrix.gguf") &&
                   hub_gguf_is_model("x/model-Q8_0.gguf") && !hub_gguf_is_model("model.bin"),
               "side files are not models");
}

static void test_revision(void) {
    test_begin("revision");
    const char *json = "{\"id\":\"o/m\",\"sha\":\"0123456789ABCDEF0123456789abcdef01234567\","
                       "\"siblings\":[{\"rfilename\":\"b.gguf\"},{\"rfilename\":\"a/c.json\"}]}";
    char commit[HUB_COMMIT_LEN + 1];
    char **names = NULL;
    size_t n = 0;
    hub_error err = {{0}};
    TEST_CHECK(hub_revision_parse(json, strlen(json), commit, &names, &n, &err) && n == 2 &&
                   !strcmp(names[0], "a/c.json") && !strcmp(names[1], "b.gguf") &&
                   !strcmp(commit, "0123456789abcdef0123456789abcdef01234567"),
               "a revision: sorted names, lower-case commit (%s)", err.msg);
    hub_free_list(names, n);
    static const struct {
        const char *json, *error;
    } bad[] = {
        {"[]", "not a JSON object"},
        {"{\"sha\":\"abc\",\"siblings\":[]}", "no 40-digit commit in \"sha\""},
        {"{\"sha\":\"0123456789abcdef0123456789abcdef01234567\"}", "no \"siblings\" array"},
        {"{\"sha\":\"0123456789abcdef0123456789abcdef01234567\",\"siblings\":[{\"rfilename\":\"../x\"}]}",
         "siblings[0].rfilename '../x' is not a safe relative path"},
        {"{\"sha\":\"0123456789abcdef0123456789abcdef01234567\",\"siblings\":[{\"rfilename\":\"a\"},7]}",
         "siblings[1] has no \"rfilename\" string"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        TEST_CHECK(!hub_revision_parse(bad[i].json, strlen(bad[i].json), commit, &names, &n, &err) &&
                       !strcmp(err.msg, bad[i].error) && !names,
                   "bad revision %zu: '%s'", i, err.msg);
}

static bool write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    fputs(text, f);
    return fclose(f) == 0;
}

static void test_cache(void) {
    test_begin("cache");
    const char *dir = test_tmpdir("hub");
    if (!TEST_CHECK(dir != NULL, "scratch folder")) return;
    char hub[HUB_PATH_MAX], repo_dir[HUB_PATH_MAX], path[HUB_PATH_MAX + 256];
    snprintf(hub, sizeof hub, "%s/hub", dir);
    setenv("HF_HUB_CACHE", hub, 1);
    char found_hub[HUB_PATH_MAX];
    hub_error err = {{0}};
    TEST_CHECK(hub_cache_dir(found_hub, &err) && !strcmp(found_hub, hub), "HF_HUB_CACHE is the cache");
    const char *commit = "0123456789abcdef0123456789abcdef01234567";
    const char *etag = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    hub_repo_dir(hub, "org/m-GGUF", repo_dir);
    TEST_CHECK(!strcmp(strrchr(repo_dir, '/'), "/models--org--m-GGUF"), "repo folder %s", repo_dir);
    snprintf(path, sizeof path, "%s/blobs", repo_dir);
    TEST_CHECK(hub_mkdirs(path, &err), "mkdirs: %s", err.msg);
    snprintf(path, sizeof path, "%s/blobs/%s", repo_dir, etag);
    write_text(path, "");
    TEST_CHECK(hub_snapshot_link(repo_dir, commit, "sub/m-Q8_0.gguf", etag, &err), "link: %s", err.msg);
    snprintf(path, sizeof path, "%s/snapshots/%s/sub/m-Q8_0.gguf", repo_dir, commit);
    char target[256] = "";
    ssize_t len = readlink(path, target, sizeof target - 1);
    if (len > 0) target[len] = 0;
    TEST_CHECK(!strcmp(target, "../../../blobs/e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
               "a link one folder down: %s", target);
    char *resolved = NULL;
    TEST_CHECK(!hub_resolve_cached("org/m-GGUF", "Q8_0", &resolved, &err) && strstr(err.msg, "not in the Hugging Face cache"),
               "no refs/main yet: %s", err.msg);
    TEST_CHECK(hub_ref_write(repo_dir, "main", commit, &err), "ref: %s", err.msg);
    char read_back[HUB_COMMIT_LEN + 1];
    TEST_CHECK(hub_ref_read(repo_dir, "main", read_back) && !strcmp(read_back, commit), "refs/main reads back");
    TEST_CHECK(hub_resolve_cached("org/m-GGUF", "q8_0", &resolved, &err) && resolved &&
                   !strcmp(resolved, path),
               "cached GGUF: %s", resolved ? resolved : err.msg);
    free(resolved);
    resolved = NULL;
    TEST_CHECK(!hub_resolve_cached("org/m-GGUF", "Q4_0", &resolved, &err) && strstr(err.msg, "(cached: Q8_0)") &&
                   strstr(err.msg, "inferno pull org/m-GGUF:Q4_0"),
               "tag not cached: %s", err.msg);

    hub_repo_dir(hub, "org/m", repo_dir);
    snprintf(path, sizeof path, "%s/snapshots/%s", repo_dir, commit);
    hub_mkdirs(path, &err);
    TEST_CHECK(hub_ref_write(repo_dir, "main", commit, &err), "ref: %s", err.msg);
    TEST_CHECK(!hub_resolve_cached("org/m", NULL, &resolved, &err) && strstr(err.msg, "neither a GGUF nor a config.json"),
               "an empty snapshot: %s", err.msg);
    char config[HUB_PATH_MAX + 300];
    snprintf(config, sizeof config, "%s/config.json", path);
    write_text(config, "{}");
    TEST_CHECK(hub_resolve_cached("org/m", NULL, &resolved, &err) && resolved && !strcmp(resolved, path),
               "a safetensors snapshot is its folder: %s", resolved ? resolved : err.msg);
    free(resolved);
    unsetenv("HF_HUB_CACHE");
    test_tmpdir_remove();
}

int main(void) {
    test_sha256();
    test_specs();
    test_paths();
    test_gguf();
    test_revision();
    test_cache();
    return test_summary();
}
