/* curl-lazy.c - libcurl, loaded on first use.
 *
 * Every sbx program links the whole library, but only the remote backends
 * (docker) speak HTTP.  Linking libcurl outright makes the dynamic loader
 * map and relocate some thirty shared libraries (TLS, GSSAPI, LDAP, IDN...)
 * at every start: about 20 ms of a program that otherwise starts in 5, paid
 * by every `sbx-exec` on the local backend.  So we do not link it: the few
 * libcurl entry points sbx uses are defined here under their own names and
 * forward to libcurl.so.4, opened with dlopen the first time one is called.
 *
 * If libcurl cannot be loaded, the entry points fail the way libcurl does
 * when it cannot initialise (NULL handles, CURLE_FAILED_INIT), and http.c
 * turns that into an `unavailable` error.  Thread safety: the first call
 * may race in two threads; pthread_once makes the load happen once. */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>

static struct {
	CURLcode (*global_init)(long);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *);
	void (*easy_reset)(CURL *);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	const char *(*easy_strerror)(CURLcode);
	void (*free)(void *);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	CURLU *(*url)(void);
	void (*url_cleanup)(CURLU *);
	CURLUcode (*url_get)(CURLU *, CURLUPart, char **, unsigned int);
	CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
} fn;
static int loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
#define SYM(field, name) *(void **)&fn.field = dlsym(h, name); if (!fn.field) return
	SYM(global_init, "curl_global_init");
	SYM(easy_init, "curl_easy_init");
	SYM(easy_cleanup, "curl_easy_cleanup");
	SYM(easy_reset, "curl_easy_reset");
	SYM(easy_perform, "curl_easy_perform");
	SYM(easy_setopt, "curl_easy_setopt");
	SYM(easy_getinfo, "curl_easy_getinfo");
	SYM(easy_strerror, "curl_easy_strerror");
	SYM(free, "curl_free");
	SYM(slist_append, "curl_slist_append");
	SYM(slist_free_all, "curl_slist_free_all");
	SYM(url, "curl_url");
	SYM(url_cleanup, "curl_url_cleanup");
	SYM(url_get, "curl_url_get");
	SYM(url_set, "curl_url_set");
#undef SYM
	loaded = 1;
}

static int ready(void)
{
	pthread_once(&once, load);
	return loaded;
}

CURLcode curl_global_init(long flags)
{
	return ready() ? fn.global_init(flags) : CURLE_FAILED_INIT;
}

CURL *curl_easy_init(void)
{
	return ready() ? fn.easy_init() : NULL;
}

/* The functions below take a handle that only a loaded libcurl can have
 * made, so they need no check beyond the handle itself. */
void curl_easy_cleanup(CURL *c)
{
	if (c && ready())
		fn.easy_cleanup(c);
}

void curl_easy_reset(CURL *c)
{
	if (c && ready())
		fn.easy_reset(c);
}

CURLcode curl_easy_perform(CURL *c)
{
	return ready() ? fn.easy_perform(c) : CURLE_FAILED_INIT;
}

/* curl_easy_setopt takes exactly one argument after the option, whose type
 * the option's number range says (curl.h: CURLOPTTYPE_*). */
CURLcode curl_easy_setopt(CURL *c, CURLoption opt, ...)
{
	if (!ready())
		return CURLE_FAILED_INIT;
	va_list ap;
	va_start(ap, opt);
	CURLcode rc;
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		rc = fn.easy_setopt(c, opt, va_arg(ap, long));
	else if (opt < CURLOPTTYPE_FUNCTIONPOINT)
		rc = fn.easy_setopt(c, opt, va_arg(ap, void *));
	else if (opt < CURLOPTTYPE_OFF_T)
		rc = fn.easy_setopt(c, opt, va_arg(ap, void (*)(void)));
	else if (opt < CURLOPTTYPE_BLOB)
		rc = fn.easy_setopt(c, opt, va_arg(ap, curl_off_t));
	else
		rc = fn.easy_setopt(c, opt, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

/* Every CURLINFO takes one pointer. */
CURLcode curl_easy_getinfo(CURL *c, CURLINFO info, ...)
{
	if (!ready())
		return CURLE_FAILED_INIT;
	va_list ap;
	va_start(ap, info);
	CURLcode rc = fn.easy_getinfo(c, info, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

const char *curl_easy_strerror(CURLcode code)
{
	return ready() ? fn.easy_strerror(code) : "libcurl (libcurl.so.4) could not be loaded";
}

void curl_free(void *p)
{
	if (p && ready())
		fn.free(p);
}

struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s)
{
	return ready() ? fn.slist_append(l, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *l)
{
	if (l && ready())
		fn.slist_free_all(l);
}

CURLU *curl_url(void)
{
	return ready() ? fn.url() : NULL;
}

void curl_url_cleanup(CURLU *u)
{
	if (u && ready())
		fn.url_cleanup(u);
}

CURLUcode curl_url_get(CURLU *u, CURLUPart what, char **part, unsigned int flags)
{
	return ready() ? fn.url_get(u, what, part, flags) : CURLUE_OUT_OF_MEMORY;
}

CURLUcode curl_url_set(CURLU *u, CURLUPart what, const char *part, unsigned int flags)
{
	return ready() ? fn.url_set(u, what, part, flags) : CURLUE_OUT_OF_MEMORY;
}
