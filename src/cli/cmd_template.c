/*
 * cmd_template.c — `inferno template`: renders a chat request read from
 * stdin with a model's chat template and prints the prompt exactly, with
 * nothing appended. When the template is not Qwen3's, a note on stderr says
 * which template is used instead.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
    printf(
            "usage: inferno template -m MODEL.gguf|tokenizer_config.json|tokenizer.json [--describe] < request.json\n"
            "\n"
            "Renders a chat request with the model's chat template and prints the prompt.\n"
            "request.json: {\"messages\": [...], \"tools\": [...]?, \"add_generation_prompt\": bool?,\n"
            "               \"enable_thinking\": bool?}\n"
            "\n"
            "  -m PATH      model or tokenizer file holding the chat template (or ORG/NAME[:TAG],\n"
            "               from the Hugging Face cache)\n"
            "  --describe   print which template is used (\"qwen3\" or the fallback) and exit\n"
            "  -h, --help   print this help\n");
}

int cmd_template(int argc, char **argv) {
    const char *path = NULL;
    bool describe = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage();
            return 0;
        } else if (!strcmp(argv[i], "-m")) {
            if (!(path = cli_flag_value("template", argc, argv, &i))) return EXIT_USAGE;
        } else if (!strcmp(argv[i], "--describe")) {
            describe = true;
        } else {
            return cli_fail(EXIT_USAGE, "template", "unexpected argument '%s' (see inferno template --help)", argv[i]);
        }
    }
    if (!path) {
        return cli_fail(EXIT_USAGE, "template", "-m PATH is required (see inferno template --help)");
    }
    int resolve_rc = cli_resolve_model("template", &path);
    if (resolve_rc) return resolve_rc;

    inf_error err = {0};
    inf_chat_template *tmpl = NULL;
    if (inf_chat_template_load(path, &tmpl, &err) != INF_OK) return cli_fail(EXIT_RUNTIME, "template", "%s", err.msg);
    const char *description = inf_chat_template_describe(tmpl);
    if (describe) {
        printf("%s\n", description);
        inf_chat_template_free(tmpl);
        return 0;
    }
    if (strncmp(description, "qwen3", 5) != 0) fprintf(stderr, "inferno template: note: %s\n", description);

    size_t len = 0;
    char *request = cli_read_stream(stdin, &len);
    if (!request) {
        inf_chat_template_free(tmpl);
        return cli_fail(EXIT_RUNTIME, "template", "cannot read the request from stdin");
    }
    char *prompt = NULL;
    size_t prompt_len = 0;
    inf_status st = inf_chat_template_render(tmpl, request, len, &prompt, &prompt_len, &err);
    free(request);
    inf_chat_template_free(tmpl);
    if (st != INF_OK) return cli_fail(EXIT_RUNTIME, "template", "%s", err.msg);
    bool written = fwrite(prompt, 1, prompt_len, stdout) == prompt_len && fflush(stdout) == 0;
    free(prompt);
    if (!written) return cli_fail(EXIT_RUNTIME, "template", "cannot write the prompt to stdout");
    return 0;
}
