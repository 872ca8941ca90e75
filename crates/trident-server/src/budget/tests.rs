use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Wake, Waker};

use super::{Budget, Cut, Refused};

/// A waker that counts its wakes.
#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn reader() -> (Arc<Cut>, Arc<Count>) {
    let cut = Arc::new(Cut::default());
    let count = Arc::new(Count::default());
    assert!(!cut.register(&Waker::from(count.clone())));
    (cut, count)
}

#[test]
fn bytes_are_charged_until_released() {
    let budget = Budget::new(100);
    let (a, _) = reader();
    let place = budget.charge(None, &a, 30).expect("fits");
    let place = budget.charge(Some(place), &a, 30).expect("fits");
    assert_eq!(budget.used(), 60);
    budget.release(place);
    assert_eq!(budget.used(), 0);
    // Releasing twice (a body that ended, then dropped) is harmless.
    budget.release(place);
    assert_eq!(budget.used(), 0);
}

#[test]
fn when_full_the_request_that_received_bytes_the_longest_ago_is_cut_off() {
    let budget = Budget::new(100);
    let (a, a_wakes) = reader();
    let (b, b_wakes) = reader();
    let (c, _) = reader();
    let a_place = budget.charge(None, &a, 40).expect("a");
    let b_place = budget.charge(None, &b, 40).expect("b");
    // `a` receives more after `b`: `b` is now the stalest.
    let a_place = budget.charge(Some(a_place), &a, 10).expect("a again");
    assert_eq!(budget.used(), 90);
    let c_place = budget
        .charge(None, &c, 30)
        .expect("c fits by cutting b off");
    assert_eq!(b_wakes.0.load(Ordering::SeqCst), 1, "b's reader is woken");
    assert!(b.register(&Waker::from(b_wakes.clone())), "and told");
    assert_eq!(a_wakes.0.load(Ordering::SeqCst), 0, "a is not");
    assert!(!a.register(&Waker::from(a_wakes.clone())));
    assert_eq!(budget.used(), 80, "b's charge is gone at once");
    // b's next frame is refused, and releasing it changes nothing.
    assert_eq!(budget.charge(Some(b_place), &b, 1), Err(Refused::Cut));
    budget.release(b_place);
    assert_eq!(budget.used(), 80);
    budget.release(a_place);
    budget.release(c_place);
    assert_eq!(budget.used(), 0);
}

#[test]
fn several_are_cut_off_for_one_large_frame_and_a_request_never_cuts_itself() {
    let budget = Budget::new(100);
    let readers: Vec<_> = (0..5).map(|_| reader()).collect();
    let mut places = Vec::new();
    for (cut, _) in &readers {
        places.push(budget.charge(None, cut, 20).expect("fits"));
    }
    // The fifth grows by 50: the three stalest go (60 bytes), the fourth stays.
    let (fifth, _) = &readers[4];
    let place = budget.charge(Some(places[4]), fifth, 50).expect("fits");
    let told: Vec<bool> = readers
        .iter()
        .map(|(cut, count)| cut.register(&Waker::from(count.clone())))
        .collect();
    assert_eq!(told, [true, true, true, false, false]);
    assert_eq!(budget.used(), 90);
    budget.release(place);
    budget.release(places[3]);
    assert_eq!(budget.used(), 0);
}

#[test]
fn a_request_larger_than_the_whole_budget_is_refused_and_holds_nothing() {
    let budget = Budget::new(100);
    let (a, _) = reader();
    let (b, b_wakes) = reader();
    let b_place = budget.charge(None, &b, 50).expect("b");
    let a_place = budget.charge(None, &a, 60).expect("a cuts b off");
    assert_eq!(b_wakes.0.load(Ordering::SeqCst), 1);
    assert_eq!(budget.charge(Some(a_place), &a, 41), Err(Refused::TooLarge));
    assert_eq!(budget.used(), 0, "a's charge went with it");
    assert_eq!(budget.charge(None, &a, 101), Err(Refused::TooLarge));
    assert_eq!(budget.used(), 0);
    budget.release(b_place);
}
