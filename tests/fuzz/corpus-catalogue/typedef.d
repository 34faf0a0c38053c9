typedef struct s { int a; } s_t;
#pragma D option quiet
provider q {
// c
probe x__y(unsigned long long, int (*)(int));
};
