/* wordfreq - lines, words, bytes, distinct words, and the most frequent
 * words of text files (a skill example for sbx).  Words are runs of ASCII
 * letters, digits and apostrophes, folded to lower case; bytes >= 0x80 are
 * kept as word bytes so UTF-8 words stay whole. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct word { char *w; long n; struct word *next; };

#define NBUCKET 65536
static struct word *bucket[NBUCKET];
static long nuniq;

static unsigned hash(const char *s)
{
	unsigned h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h % NBUCKET;
}

static void add(const char *w)
{
	unsigned h = hash(w);
	for (struct word *p = bucket[h]; p; p = p->next)
		if (strcmp(p->w, w) == 0) {
			p->n++;
			return;
		}
	struct word *p = malloc(sizeof(*p));
	if (!p || !(p->w = strdup(w))) {
		perror("wordfreq");
		exit(2);
	}
	p->n = 1;
	p->next = bucket[h];
	bucket[h] = p;
	nuniq++;
}

static int cmp(const void *a, const void *b)
{
	const struct word *x = *(struct word *const *)a, *y = *(struct word *const *)b;
	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	return strcmp(x->w, y->w);
}

static long lines, words, bytes;

static void count(FILE *f)
{
	char w[256];
	size_t len = 0;
	int c;
	while ((c = getc(f)) != EOF) {
		bytes++;
		if (c == '\n')
			lines++;
		if (isalnum(c) || c == '\'' || c >= 0x80) {
			if (len < sizeof(w) - 1)
				w[len++] = (char)tolower(c);
			continue;
		}
		if (len) {
			w[len] = 0;
			add(w);
			words++;
			len = 0;
		}
	}
	if (len) {
		w[len] = 0;
		add(w);
		words++;
	}
}

int main(int argc, char **argv)
{
	long top = 10;
	int i = 1, nfiles = 0;
	if (i + 1 < argc && strcmp(argv[i], "-n") == 0) {
		top = atol(argv[i + 1]);
		i += 2;
	}
	for (; i < argc; i++, nfiles++) {
		FILE *f = strcmp(argv[i], "-") ? fopen(argv[i], "r") : stdin;
		if (!f) {
			perror(argv[i]);
			return 2;
		}
		count(f);
		if (f != stdin)
			fclose(f);
	}
	if (!nfiles)
		count(stdin);
	printf("lines %ld\nwords %ld\nchars %ld\nunique %ld\n", lines, words, bytes, nuniq);
	struct word **all = malloc(sizeof(*all) * (size_t)(nuniq ? nuniq : 1));
	long k = 0;
	for (unsigned h = 0; h < NBUCKET; h++)
		for (struct word *p = bucket[h]; p; p = p->next)
			all[k++] = p;
	qsort(all, (size_t)k, sizeof(*all), cmp);
	for (long j = 0; j < k && j < top; j++)
		printf("%ld %s\n", all[j]->n, all[j]->w);
	return 0;
}
