/*
 * replay_corpus.c -- feed every file of the fuzz corpus to the parser.
 *
 * Built with any compiler (no libFuzzer needed), so `meson test` replays
 * the saved corpus as a regression test on every build.  Arguments are
 * files or directories; a directory's regular files are all read.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "text_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	size_t len;
	char *buf = pr_read_text_file(path, 64u << 20, &len);
	if (!buf) {
		fprintf(stderr, "replay_corpus: %s: %s\n", path, strerror(errno));
		return -1;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	long files = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay_corpus: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i]) != 0)
				return 1;
			files++;
			continue;
		}
		DIR *dir = opendir(argv[i]);
		if (!dir) {
			fprintf(stderr, "replay_corpus: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		struct dirent *e;
		while ((e = readdir(dir)) != NULL) {
			if (e->d_name[0] == '.')
				continue;
			char path[4096];
			snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
			if (replay_file(path) != 0) {
				closedir(dir);
				return 1;
			}
			files++;
		}
		closedir(dir);
	}
	if (files == 0) {
		fprintf(stderr, "replay_corpus: no corpus files given\n");
		return 1;
	}
	printf("replayed %ld corpus files\n", files);
	return 0;
}
