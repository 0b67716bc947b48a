/*
 * api_anthropic.c — Anthropic's Messages API, /v1/messages.
 */
#include "server/server_internal.h"

int api_messages(http_exchange *ex, const cJSON *body) {
    (void)body;
    return http_reply_error(ex, 404, NULL, NULL, "not yet");
}
