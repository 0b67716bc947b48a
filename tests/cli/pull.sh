#!/bin/sh
# `inferno pull` and `-m ORG/NAME[:TAG]` against a fake hub on 127.0.0.1
# (tests/cli/fake_hub.mjs: the hub's API, resolve URLs with their headers,
# a 302 to a CDN on another port that honours Range): a GGUF by tag (any case) and by
# the default tag, a split GGUF, a safetensors checkpoint with shards, the
# Hugging Face cache layout (blob named by sha256, relative snapshot link,
# refs/main), a download cut off mid-file and resumed, a partial file left
# by an earlier run resumed with Range, a sha256 mismatch refused (nothing
# left behind), HF_TOKEN, HF_ENDPOINT, 401/404/unknown tag as one-line
# errors, a second pull that downloads nothing, and the offline -m
# resolution in info, tokenize, run and serve (which answers under the
# ORG/NAME:TAG name; a path on disk wins). Tiny synthetic GGUFs; about 3 s.
# $INFERNO is the binary (set by scripts/run-tests.sh); run from the repo root.
. tests/cli/lib.sh

if ! command -v node >/dev/null 2>&1; then
    bad "node is needed (Node 20 or later)"
    cp "$log" /tmp/pull-debug.log
finish
fi

# ---- the repositories ----
root=$tmp/hub-root
state=$tmp/hub-state
mkdir -p "$root/test/tiny-GGUF" "$root/test/tiny-st" "$root/test/flaky-GGUF" "$root/test/corrupt-GGUF" \
    "$root/test/private-GGUF" "$state"
SYNTH="--layers 1 --embd 64 --heads 4 --kv-heads 2 --head-dim 16 --ff 128 --vocab 512 --ctx 256"
g=$root/test/tiny-GGUF
if ! "$INFERNO" synth -o "$g/tiny-Q8_0.gguf" $SYNTH --name tiny-q8 >"$tmp/synth.log" 2>&1 ||
    ! "$INFERNO" synth -o "$g/tiny-F16.gguf" $SYNTH --type f16 --name tiny-f16 >>"$tmp/synth.log" 2>&1; then
    bad "inferno synth"
    cat "$tmp/synth.log"
    cp "$log" /tmp/pull-debug.log
finish
fi
# a split GGUF: a BF16 model in llama.cpp's gguf-split layout (build/gguf_split)
"$INFERNO" synth -o "$tmp/tiny-BF16.gguf" $SYNTH --type bf16 --name tiny-bf16 >>"$tmp/synth.log" 2>&1
"$(dirname "$INFERNO")/gguf_split" --split-max-tensors 8 "$tmp/tiny-BF16.gguf" "$g/tiny-BF16" >>"$tmp/synth.log" 2>&1 ||
    bad "gguf_split"
head -c 100 /dev/urandom >"$g/mmproj-tiny-Q8_0.gguf"
echo "# tiny" >"$g/README.md"
"$INFERNO" synth -o "$root/test/flaky-GGUF/flaky-Q8_0.gguf" $SYNTH --seed 2 >>"$tmp/synth.log" 2>&1
echo flaky-Q8_0.gguf >"$root/test/flaky-GGUF/.drop"
cp "$g/tiny-Q8_0.gguf" "$root/test/corrupt-GGUF/corrupt-Q8_0.gguf"
echo corrupt-Q8_0.gguf >"$root/test/corrupt-GGUF/.corrupt"
cp "$g/tiny-Q8_0.gguf" "$root/test/private-GGUF/private-Q8_0.gguf"
echo hf_testtoken123 >"$root/test/private-GGUF/.token"
st=$root/test/tiny-st
cp data/qwen3-tokenizer/tokenizer.json data/qwen3-tokenizer/tokenizer_config.json "$st/"
echo '{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}' >"$st/config.json"
echo '{"temperature": 0.6, "top_p": 0.95}' >"$st/generation_config.json"
head -c 5000 /dev/urandom >"$st/model-00001-of-00002.safetensors"
head -c 4000 /dev/urandom >"$st/model-00002-of-00002.safetensors"
printf '{"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors", "c": "model-00001-of-00002.safetensors"}}' \
    >"$st/model.safetensors.index.json"
mkdir -p "$st/original"
echo "not wanted" >"$st/original/consolidated.pth"
echo "# st" >"$st/README.md"

# ---- the fake hub, killed on exit ----
node tests/cli/fake_hub.mjs "$root" "$state" >"$tmp/hub.log" 2>&1 &
hub_pid=$!
trap 'kill $hub_pid 2>/dev/null; rm -rf "$tmp"' EXIT
i=0
while [ ! -s "$state/port" ] && [ $i -lt 100 ]; do # 10 s at most
    sleep 0.1
    i=$((i + 1))
done
if [ ! -s "$state/port" ]; then
    bad "the fake hub did not start"
    cat "$tmp/hub.log"
    cp "$log" /tmp/pull-debug.log
finish
fi
port=$(cat "$state/port")
export HF_ENDPOINT="http://127.0.0.1:$port"
unset HF_TOKEN HF_HUB_CACHE HUGGINGFACE_HUB_CACHE HF_HUB_OFFLINE HF_TOKEN_PATH XDG_CACHE_HOME
export HF_HOME="$tmp/hf"
hubdir=$HF_HOME/hub
log=$state/requests.log

commit_of() { printf 'commit:%s' "$1" | sha1sum | cut -d' ' -f1; }
requests() { wc -l <"$log" 2>/dev/null || echo 0; }

# pull_ok WHAT ARGS...: exit 0, nothing on stderr (piped: quiet), the path on stdout in $out
pull_ok() {
    what=$1
    shift
    "$INFERNO" pull "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    if [ "$rc" -eq 0 ] && [ ! -s "$tmp/err" ] && [ -n "$out" ]; then
        ok
    else
        bad "$what: exit $rc, stdout '$out'"
        cat "$tmp/err"
    fi
}

# fails_with WHAT CODE PATTERN COMMAND...: that exit code and one stderr line matching PATTERN
fails_with() {
    what=$1 code=$2 pattern=$3
    shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    lines=$(wc -l <"$tmp/err")
    if [ "$rc" -eq "$code" ] && [ "$lines" -eq 1 ] && grep -q -e "$pattern" "$tmp/err"; then
        ok
    else
        bad "$what: exit $rc (want $code), $lines stderr lines, want '$pattern'"
        cat "$tmp/err"
    fi
}

# ---- usage ----
check "--help exits 0 with usage on stdout" '"$INFERNO" pull --help | grep -q "^usage: inferno pull"'
check "inferno --help lists pull" '"$INFERNO" --help | grep -q "^  pull "'
fails_with "no repository" 2 "no repository" "$INFERNO" pull
fails_with "bad spec" 2 "not ORG/NAME" "$INFERNO" pull "no-slash:Q8_0"
fails_with "bad tag" 2 "not ORG/NAME" "$INFERNO" pull "test/tiny-GGUF:Q8-0"
fails_with "unknown option" 2 "--frob" "$INFERNO" pull --frob test/tiny-GGUF

# ---- a GGUF by tag, in any case ----
repo_dir=$hubdir/models--test--tiny-GGUF
c=$(commit_of test/tiny-GGUF)
sha=$(sha256sum "$g/tiny-Q8_0.gguf" | cut -d' ' -f1)
pull_ok "pull test/tiny-GGUF:q8_0" test/tiny-GGUF:q8_0
check "prints the snapshot path" '[ "$out" = "$repo_dir/snapshots/$c/tiny-Q8_0.gguf" ]'
check "the blob is named by its sha256 and holds the file" 'cmp -s "$repo_dir/blobs/$sha" "$g/tiny-Q8_0.gguf"'
check "the snapshot file links to ../../blobs/<sha256>" '[ "$(readlink "$out")" = "../../blobs/$sha" ]'
check "refs/main holds the commit" '[ "$(cat "$repo_dir/refs/main")" = "$c" ]'
check "only the tagged file was pulled" '[ "$(ls "$repo_dir/snapshots/$c")" = "tiny-Q8_0.gguf" ]'
check "no .incomplete left" '! ls "$repo_dir/blobs" | grep -q incomplete'
check "the HEAD went to resolve/<commit>/<file>" 'grep -q "\"HEAD\",\"path\":\"/test/tiny-GGUF/resolve/$c/tiny-Q8_0.gguf\"" "$log"'
check "the bytes came from the CDN path" 'grep -q "\"GET\",\"path\":\"/cdn/$sha\"" "$log"'
check "no token sent without HF_TOKEN" '! grep -q "\"auth\":\"Bearer" "$log"'

# ---- a second pull downloads nothing ----
before=$(requests)
pull_ok "second pull" test/tiny-GGUF:Q8_0
check "second pull: same path" '[ "$out" = "$repo_dir/snapshots/$c/tiny-Q8_0.gguf" ]'
check "second pull: one API request, no HEAD or download" '[ $(($(requests) - before)) -eq 1 ] && tail -n 1 "$log" | grep -q "/api/models/test/tiny-GGUF/revision/main"'

# ---- offline -m ORG/NAME:TAG ----
before=$(requests)
check "info -m ORG/NAME:Q8_0 offline" 'HF_ENDPOINT=http://127.0.0.1:9 "$INFERNO" info -m test/tiny-GGUF:Q8_0 >"$tmp/info" 2>&1 && grep -q "^file .*snapshots/$c/tiny-Q8_0.gguf" "$tmp/info" && grep -q "^name  *tiny-q8" "$tmp/info"'
check "info -m ORG/NAME (default tag) offline" '"$INFERNO" info -m test/tiny-GGUF 2>&1 | grep -q "^name  *tiny-q8"'
check "tokenize -m ORG/NAME:TAG" '"$INFERNO" tokenize -m test/tiny-GGUF:Q8_0 hi >/dev/null'
check "-m resolution made no requests" '[ "$(requests)" -eq "$before" ]'
fails_with "info: tag not in the cache" 1 "no GGUF tagged F16 in the cache (cached: Q8_0); run: inferno pull test/tiny-GGUF:F16" \
    "$INFERNO" info -m test/tiny-GGUF:F16
fails_with "info: repository not in the cache" 1 "test/never:Q8_0 is no file here and not in the Hugging Face cache.*run: inferno pull test/never:Q8_0" \
    "$INFERNO" info -m test/never:Q8_0
fails_with "run: repository not in the cache" 1 "run: inferno pull test/never" "$INFERNO" run -m test/never -p hi
fails_with "serve: repository not in the cache" 1 "run: inferno pull test/never" "$INFERNO" serve -m test/never --port 0
fails_with "a missing dir/file.gguf is a file error, not a repository" 1 "nope/x.gguf" "$INFERNO" info -m nope/x.gguf
check "... and does not mention the cache" '! grep -q "Hugging Face cache" "$tmp/err"'
# serve -m ORG/NAME:TAG answers under that name
: >"$tmp/serve.err" # before the background job opens it
"$INFERNO" serve -m test/tiny-GGUF:Q8_0 --port 0 -c 64 --parallel 1 -t 1 >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!
trap 'kill $hub_pid $serve_pid 2>/dev/null; rm -rf "$tmp"' EXIT
i=0
while ! grep -q "ready on" "$tmp/serve.err" && kill -0 $serve_pid 2>/dev/null && [ $i -lt 100 ]; do # 10 s at most
    sleep 0.1
    i=$((i + 1))
done
serve_url=$(sed -n 's/.*ready on \(http:[^ ]*\).*/\1/p' "$tmp/serve.err" | head -n 1)
check "serve -m ORG/NAME:TAG: /v1/models names it so" '[ -n "$serve_url" ] && [ "$(node -e "fetch(process.argv[1] + \"/v1/models\").then(r => r.json()).then(j => console.log(j.data[0].id))" "$serve_url")" = "test/tiny-GGUF:Q8_0" ]'
kill -TERM $serve_pid 2>/dev/null
wait $serve_pid
serve_rc=$?
check "serve exits 0 on SIGTERM" '[ $serve_rc -eq 0 ]'
mkdir -p "$tmp/wd/test"
cp "$g/tiny-F16.gguf" "$tmp/wd/test/tiny-GGUF:Q8_0"
inferno_abs=$(cd "$(dirname "$INFERNO")" && pwd)/$(basename "$INFERNO")
check "a path on disk wins over the cache" '(cd "$tmp/wd" && "$inferno_abs" info -m test/tiny-GGUF:Q8_0 2>&1) | grep -q "^name  *tiny-f16"'

# ---- the default tag (Q4_K_M, else Q8_0, else the first), unknown tags ----
export HF_HOME="$tmp/hf-default"
pull_ok "pull without a tag" test/tiny-GGUF
check "the default tag is Q8_0 here (no Q4_K_M)" '[ "$out" = "$tmp/hf-default/hub/models--test--tiny-GGUF/snapshots/$c/tiny-Q8_0.gguf" ]'
fails_with "unknown tag lists the tags" 1 "no GGUF tagged Q2_K (tags: BF16, F16, Q8_0)" "$INFERNO" pull test/tiny-GGUF:Q2_K

# ---- a split GGUF comes whole and -m loads every part ----
pull_ok "pull a split GGUF" test/tiny-GGUF:bf16
check "split: the path is part 1" '[ "$(basename "$out")" = "tiny-BF16-00001-of-00002.gguf" ]'
check "split: both parts pulled" 'cmp -s "$(dirname "$out")/tiny-BF16-00002-of-00002.gguf" "$g/tiny-BF16-00002-of-00002.gguf"'
check "-m of a split GGUF loads both parts" '"$INFERNO" info -m test/tiny-GGUF:BF16 2>&1 | grep -q "^name  *tiny-bf16"'
"$INFERNO" logits -m "$tmp/tiny-BF16.gguf" --tokens 1,2,3 >"$tmp/logits-whole" 2>&1
check "-m of a split GGUF: the unsplit file's logits" \
    '"$INFERNO" logits -m test/tiny-GGUF:BF16 --tokens 1,2,3 2>&1 | cmp -s - "$tmp/logits-whole"'
mv "$(dirname "$out")/tiny-BF16-00002-of-00002.gguf" "$tmp/part2"
fails_with "-m of a split GGUF with a part missing" 1 "only some of the 2 parts" "$INFERNO" info -m test/tiny-GGUF:BF16
mv "$tmp/part2" "$(dirname "$out")/tiny-BF16-00002-of-00002.gguf"

# ---- a safetensors checkpoint ----
pull_ok "pull a safetensors repository" test/tiny-st
cst=$(commit_of test/tiny-st)
check "safetensors: the path is the snapshot folder" '[ "$out" = "$tmp/hf-default/hub/models--test--tiny-st/snapshots/$cst" ]'
check "safetensors: config, tokenizer, index and both shards, nothing else" '[ "$(ls "$out" | tr "\n" " ")" = "config.json generation_config.json model-00001-of-00002.safetensors model-00002-of-00002.safetensors model.safetensors.index.json tokenizer.json tokenizer_config.json " ]'
check "safetensors: shard bytes" 'cmp -s "$out/model-00002-of-00002.safetensors" "$st/model-00002-of-00002.safetensors"'
git_blob_id() { { printf 'blob %d\000' "$(wc -c <"$1")"; cat "$1"; } | sha1sum | cut -d' ' -f1; }
check "safetensors: a JSON blob is named by its git blob id" '[ "$(readlink "$out/config.json")" = "../../blobs/$(git_blob_id "$st/config.json")" ]'
check "tokenize -m ORG/NAME reads the cached checkpoint" '[ "$("$INFERNO" tokenize -m test/tiny-st hello)" = "[14990]" ]'
fails_with "a tag on a repository without GGUFs" 1 "holds no GGUF files" "$INFERNO" pull test/tiny-st:Q8_0

# ---- a download cut off mid-file resumes ----
export HF_HOME="$tmp/hf-resume"
pull_ok "pull with the connection dropped halfway" test/flaky-GGUF:Q8_0
fsha=$(sha256sum "$root/test/flaky-GGUF/flaky-Q8_0.gguf" | cut -d' ' -f1)
check "resumed: a Range request followed the cut" 'grep "/cdn/$fsha" "$log" | grep -q "\"range\":\"bytes=[1-9][0-9]*-\""'
check "resumed: the file is whole" 'cmp -s "$out" "$root/test/flaky-GGUF/flaky-Q8_0.gguf"'

# ---- a partial file from an earlier run resumes with Range ----
blobs=$HF_HOME/hub/models--test--private-GGUF/blobs
size=$(wc -c <"$g/tiny-Q8_0.gguf")
half=$((size / 2))
mkdir -p "$blobs"
head -c "$half" "$g/tiny-Q8_0.gguf" >"$blobs/$sha.incomplete"
export HF_TOKEN=hf_testtoken123
pull_ok "pull over an .incomplete (with HF_TOKEN)" test/private-GGUF
check "the .incomplete resumed at its size" 'grep "/cdn/$sha" "$log" | grep -q "\"range\":\"bytes=$half-\""'
check "resumed from disk: the file is whole, no .incomplete" 'cmp -s "$out" "$g/tiny-Q8_0.gguf" && [ ! -e "$blobs/$sha.incomplete" ]'
check "HF_TOKEN went out as a bearer token" 'grep "/test/private-GGUF/" "$log" | grep -q "\"auth\":\"Bearer hf_testtoken123\""'
check "... to the hub only, not to the CDN" '! grep "/cdn/" "$log" | grep -q "\"auth\":\"Bearer"'
unset HF_TOKEN
fails_with "401 without the token" 1 "test/private-GGUF: the hub refused access (.*HTTP 401.*restricted.*HF_TOKEN" \
    "$INFERNO" pull test/private-GGUF
fails_with "404 repository" 1 "test/missing: no such repository or revision 'main' (.*HTTP 404 Not Found: Repository not found)" \
    "$INFERNO" pull test/missing
fails_with "404 revision" 1 "no such repository or revision 'v9'" "$INFERNO" pull test/tiny-GGUF --revision v9
fails_with "HF_HUB_OFFLINE" 1 "HF_HUB_OFFLINE" env HF_HUB_OFFLINE=1 "$INFERNO" pull test/tiny-GGUF

# ---- a sha256 mismatch is refused and nothing is left ----
export HF_HOME="$tmp/hf-corrupt"
crepo=$HF_HOME/hub/models--test--corrupt-GGUF
fails_with "sha256 mismatch" 1 "corrupt-Q8_0.gguf: sha256 mismatch" "$INFERNO" pull test/corrupt-GGUF:Q8_0
check "mismatch: no snapshot file, no blob, no .incomplete, no ref" '[ -z "$(ls "$crepo/blobs")" ] && [ ! -e "$crepo/snapshots" ] && [ ! -e "$crepo/refs/main" ]'

# ---- HF_ENDPOINT with a trailing slash, and HF_HUB_CACHE ----
export HF_HUB_CACHE="$tmp/hub-cache" HF_ENDPOINT="http://127.0.0.1:$port/"
pull_ok "HF_ENDPOINT with a trailing slash, HF_HUB_CACHE" test/tiny-GGUF:Q8_0
check "HF_HUB_CACHE holds it" '[ "$out" = "$tmp/hub-cache/models--test--tiny-GGUF/snapshots/$c/tiny-Q8_0.gguf" ] && [ -s "$out" ]'
unset HF_HUB_CACHE
fails_with "an endpoint nobody answers" 1 "Couldn.t connect" env HF_ENDPOINT=http://127.0.0.1:9 "$INFERNO" pull test/tiny-GGUF

finish
