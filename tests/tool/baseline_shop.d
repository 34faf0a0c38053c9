/*
 * baseline_shop.d -- the tiny provider of baseline_program.c, for
 * test_check_baseline.py: `check --provider baseline_shop.d` makes "shop"
 * the provider a baseline covers.
 */
provider shop {
	probe order__open(unsigned long long, long long);
	probe pay(unsigned long long, long long, int);
	probe refund(unsigned long long, long long);
	probe ship(unsigned long long);
};
