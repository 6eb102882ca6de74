//! Conditions in CEL, the Common Expression Language: the `when` of a work rule, of a process's
//! wait, of a test's mock. A condition is compiled once (when a rule is written or a package is
//! checked) and evaluated over JSON: each top-level field of the input is a variable (`fact`,
//! `input`, …), and the result must be a boolean.
//!
//! The CEL implementation (`cel`, pinned exactly) stays behind [`Condition`], so it can be
//! swapped; one environment serves the whole process. The CEL specification's own cases that
//! apply to JSON run against it in the tests (`tests/cel-spec-cases.json`), so a version bump is
//! checked.
//!
//! ```
//! use serde_json::json;
//! use skill_conditions::Condition;
//!
//! let when = Condition::compile("fact.data.amount > 100 && fact.data.currency == 'EUR'").unwrap();
//! let fact = json!({"fact": {"data": {"amount": 250, "currency": "EUR"}}});
//! assert_eq!(when.eval(&fact), Ok(true));
//! let bad = Condition::compile("fact.data.amount >").unwrap_err();
//! assert_eq!((bad.line, bad.column > 0), (1, true));
//! ```

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

mod cost;

pub use cost::MAX_COST;

/// The longest source accepted, in bytes.
pub const MAX_SOURCE: usize = 2048;
/// The deepest nesting of brackets a source may have.
pub const MAX_NESTING: usize = 24;
/// The longest an evaluation may take: past it, every variable the expression reads again is
/// `null`, so what is left of it fails at once and [`Condition::eval`] answers an [`EvalError`]
/// whose `over_budget` is set. Before it runs, an evaluation's cost over its input is bounded
/// ([`MAX_COST`]), so this is the second line, not the first.
pub const EVAL_BUDGET: std::time::Duration = std::time::Duration::from_secs(1);
/// The stack the parser and the interpreter run on (they recurse over the expression).
const STACK_BYTES: usize = 64 * 1024 * 1024;

/// `work` on a thread of its own with a stack deep enough for any accepted expression: the
/// caller's stack (a runtime's worker) is not what the expression's depth is measured against.
fn on_deep_stack<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        match std::thread::Builder::new().name("condition".into()).stack_size(STACK_BYTES).spawn_scoped(scope, work) {
            Ok(running) => running.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // No thread to be had: the caller's own stack, which the nesting bound keeps safe.
            Err(_) => unreachable_spawn(),
        }
    })
}

#[allow(clippy::panic)]
fn unreachable_spawn() -> ! {
    panic!("a thread for evaluating a condition could not be started")
}

/// The deepest nesting of `(`, `[` and `{` in `source`, outside string literals.
fn nesting(source: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in source.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' => quote = Some(c),
                '(' | '[' | '{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                ')' | ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
    }
    deepest
}

/// Why a source is not a condition: the message, and where (1-based; 0 when the whole source).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    pub message: String,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}, column {}: {}", self.line, self.column, self.message)
        }
    }
}

impl std::error::Error for CompileError {}

/// Why a condition has no boolean value for an input: a missing field, a type mismatch, a
/// division by zero, or a result that is not a boolean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError {
    pub message: String,
    /// The condition costs too much for its input, whatever its value would be: its estimated
    /// cost is over [`MAX_COST`] (nothing was evaluated), or it ran past its time
    /// ([`EVAL_BUDGET`], or the one [`Condition::eval_within`] was given).
    pub over_budget: bool,
}

impl EvalError {
    fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), over_budget: false }
    }
}

/// The evaluation's clock, consulted by every read of a variable: past the deadline, the
/// variable reads as `null` (and the flag says so).
struct Budget {
    deadline: std::time::Instant,
    spent: std::sync::atomic::AtomicBool,
}

impl cel::context::VariableResolver for Budget {
    fn resolve<'b>(&'b self, _variable: &str) -> Option<cel::common::value::CowVal<'b, 'b>> {
        if std::time::Instant::now() < self.deadline {
            return None;
        }
        self.spent.store(true, std::sync::atomic::Ordering::Relaxed);
        cel::Value::Null.try_into().ok().map(cel::common::value::CowVal::Owned)
    }
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EvalError {}

/// A compiled condition.
pub struct Condition {
    source: String,
    program: cel::Program,
}

impl fmt::Debug for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condition").field("source", &self.source).finish()
    }
}

/// The process's one environment: CEL's standard functions and macros.
fn env() -> &'static Arc<cel::Env> {
    static ENV: OnceLock<Arc<cel::Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(cel::Env::stdlib()))
}

impl Condition {
    /// Compiles `source` (at most [`MAX_SOURCE`] bytes, not blank).
    pub fn compile(source: &str) -> Result<Self, CompileError> {
        if source.len() > MAX_SOURCE {
            return Err(CompileError {
                message: format!("a condition is at most {MAX_SOURCE} bytes; this one has {}", source.len()),
                line: 0,
                column: 0,
            });
        }
        if source.trim().is_empty() {
            return Err(CompileError { message: "a condition is not blank".to_owned(), line: 0, column: 0 });
        }
        if nesting(source) > MAX_NESTING {
            return Err(CompileError {
                message: format!("a condition nests brackets at most {MAX_NESTING} deep"),
                line: 0,
                column: 0,
            });
        }
        let compiled = on_deep_stack(|| {
            env().compile(source).map_err(|errors| {
                let first = errors.errors.first();
                let (line, column) = first.map_or((0, 0), |error| {
                    (usize::try_from(error.pos.0).unwrap_or(0), usize::try_from(error.pos.1).unwrap_or(0))
                });
                let message = first.map_or_else(|| "not a CEL expression".to_owned(), |error| error.msg.clone());
                CompileError { message, line, column }
            })
        });
        let program = compiled?;
        if nested_macro(program.expression(), false) {
            return Err(CompileError {
                message: "a macro (all, exists, exists_one, map, filter) inside another's body makes the cost grow with the square of the data: write it without nesting".to_owned(),
                line: 0,
                column: 0,
            });
        }
        Ok(Self { source: source.to_owned(), program })
    }

    /// Compiles `source`, which may read only the variables `known` (a rule's condition reads
    /// `fact`): another one is refused at once, not when an input lacks it.
    pub fn compile_reading(source: &str, known: &[&str]) -> Result<Self, CompileError> {
        let compiled = Self::compile(source)?;
        if let Some(other) = compiled.variables().into_iter().find(|name| !known.contains(&name.as_str())) {
            return Err(CompileError {
                message: format!("`{other}` is not known here: this condition reads {}", known.join(", ")),
                line: 0,
                column: 0,
            });
        }
        Ok(compiled)
    }

    /// The source it was compiled from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The variables it reads (sorted), so a caller can refuse one its input never has.
    pub fn variables(&self) -> Vec<String> {
        let mut names = std::collections::BTreeSet::new();
        free_variables(self.program.expression(), &mut Vec::new(), &mut names);
        names.into_iter().collect()
    }

    /// Its value over `input`, whose top-level fields are the variables.
    /// At most [`EVAL_BUDGET`] long.
    pub fn eval(&self, input: &Value) -> Result<bool, EvalError> {
        self.eval_within(input, EVAL_BUDGET)
    }

    /// Its value over `input`, in at most about `budget`: past it, an [`EvalError`] whose
    /// `over_budget` is set.
    pub fn eval_within(&self, input: &Value, budget: std::time::Duration) -> Result<bool, EvalError> {
        match self.value(input, budget)? {
            cel::Value::Bool(value) => Ok(value),
            other => Err(EvalError::new(format!("the condition is a {:?}, not a boolean", other.type_of()))),
        }
    }

    /// Its CEL value over `input` (what [`Condition::eval`] judges), on a deep stack.
    fn value(&self, input: &Value, budget: std::time::Duration) -> Result<cel::Value, EvalError> {
        on_deep_stack(|| self.value_here(input, budget))
    }

    fn value_here(&self, input: &Value, budget: std::time::Duration) -> Result<cel::Value, EvalError> {
        let started = std::time::Instant::now();
        let cost = cost::estimate(self.program.expression(), input);
        if cost > MAX_COST {
            let cost = if cost.is_finite() { format!("up to {cost:.0} units") } else { "without bound".to_owned() };
            return Err(EvalError {
                message: format!(
                    "the condition would cost {cost} over this input, more than the {MAX_COST:.0} a condition may \
                     take (a list joined to itself, a loop that copies large data at every step): nothing was evaluated"
                ),
                over_budget: true,
            });
        }
        let clock = Budget { deadline: started + budget, spent: false.into() };
        let mut context = cel::Context::with_env(Arc::clone(env()));
        if let Value::Object(fields) = input {
            for (name, value) in fields {
                context.add_variable_from_value(name.as_str(), to_cel(value));
            }
        }
        context.set_variable_resolver(&clock);
        let value = self.program.execute(&context);
        if clock.spent.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(EvalError {
                message: format!(
                    "the condition ran past its {} ms: it costs too much for this input (a loop that copies \
                     the input at every step, say)",
                    budget.as_millis()
                ),
                over_budget: true,
            });
        }
        value.map_err(|error| EvalError::new(error.to_string()))
    }
}

/// A JSON value as CEL sees it: a whole number is an `int` (a `uint` only beyond an `int`'s
/// range), any other number a `double`, an object a map with string keys.
fn to_cel(value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            _ => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(text) => cel::Value::String(Arc::new(text.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(fields) => {
            let map: std::collections::HashMap<cel::objects::Key, cel::Value> = fields
                .iter()
                .map(|(key, value)| (cel::objects::Key::String(Arc::new(key.clone())), to_cel(value)))
                .collect();
            cel::Value::Map(cel::objects::Map { map: Arc::new(map) })
        }
    }
}

/// Whether a comprehension (a macro's loop) sits inside another's body: `inside` says whether
/// `expression` is in one already.
fn nested_macro(expression: &cel::IdedExpr, inside: bool) -> bool {
    use cel::common::ast::{EntryExpr, Expr};
    match &expression.expr {
        Expr::Comprehension(comprehension) => {
            inside
                || nested_macro(&comprehension.iter_range, inside)
                || nested_macro(&comprehension.accu_init, inside)
                || nested_macro(&comprehension.loop_cond, true)
                || nested_macro(&comprehension.loop_step, true)
                || nested_macro(&comprehension.result, inside)
        }
        Expr::Call(call) => call.target.iter().map(AsRef::as_ref).chain(&call.args).any(|e| nested_macro(e, inside)),
        Expr::Select(select) => nested_macro(&select.operand, inside),
        Expr::List(list) => list.elements.iter().any(|e| nested_macro(e, inside)),
        Expr::Map(map) => map.entries.iter().any(|entry| match &entry.expr {
            EntryExpr::MapEntry(entry) => nested_macro(&entry.key, inside) || nested_macro(&entry.value, inside),
            EntryExpr::StructField(field) => nested_macro(&field.value, inside),
        }),
        Expr::Struct(fields) => fields.entries.iter().any(|entry| match &entry.expr {
            EntryExpr::StructField(field) => nested_macro(&field.value, inside),
            EntryExpr::MapEntry(entry) => nested_macro(&entry.value, inside),
        }),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => false,
    }
}

/// The identifiers `expression` reads that no enclosing comprehension binds, into `names`;
/// `bound` holds the variables of the comprehensions around it.
fn free_variables(expression: &cel::IdedExpr, bound: &mut Vec<String>, names: &mut std::collections::BTreeSet<String>) {
    use cel::common::ast::{EntryExpr, Expr};
    match &expression.expr {
        Expr::Ident(name) => {
            if !bound.contains(name) {
                names.insert(name.clone());
            }
        }
        Expr::Call(call) => {
            for inner in call.target.iter().map(AsRef::as_ref).chain(&call.args) {
                free_variables(inner, bound, names);
            }
        }
        Expr::Select(select) => free_variables(&select.operand, bound, names),
        Expr::List(list) => list.elements.iter().for_each(|inner| free_variables(inner, bound, names)),
        Expr::Map(map) => {
            for entry in &map.entries {
                if let EntryExpr::MapEntry(entry) = &entry.expr {
                    free_variables(&entry.key, bound, names);
                    free_variables(&entry.value, bound, names);
                }
            }
        }
        Expr::Struct(fields) => {
            for entry in &fields.entries {
                if let EntryExpr::StructField(field) = &entry.expr {
                    free_variables(&field.value, bound, names);
                }
            }
        }
        Expr::Comprehension(comprehension) => {
            free_variables(&comprehension.iter_range, bound, names);
            free_variables(&comprehension.accu_init, bound, names);
            let depth = bound.len();
            bound.push(comprehension.iter_var.clone());
            bound.extend(comprehension.iter_var2.clone());
            bound.push(comprehension.accu_var.clone());
            free_variables(&comprehension.loop_cond, bound, names);
            free_variables(&comprehension.loop_step, bound, names);
            free_variables(&comprehension.result, bound, names);
            bound.truncate(depth);
        }
        Expr::Literal(_) | Expr::Unspecified => {}
    }
}

#[cfg(test)]
mod spec;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_condition_reads_its_input_and_is_a_boolean() {
        let when = Condition::compile("fact.kind == 'claim.received' && size(fact.data.text) > 3").expect("compiles");
        assert_eq!(when.variables(), ["fact"]);
        let macro_ = Condition::compile("fact.data.items.all(i, i.price > 0) && has(fact.data.x)").expect("compiles");
        assert_eq!(macro_.variables(), ["fact"], "a macro's own variable is not an input");
        let fact = |text: &str| json!({"fact": {"kind": "claim.received", "data": {"text": text}}});
        assert_eq!(when.eval(&fact("The parcel is late")), Ok(true));
        assert_eq!(when.eval(&fact("no")), Ok(false));
        let stray = Condition::compile_reading("facts.kind == 'x'", &["fact"]).expect_err("unknown variable");
        assert!(stray.message.contains("`facts`"), "{stray}");
        assert!(Condition::compile_reading("fact.kind == 'x'", &["fact"]).is_ok());
        let arithmetic =
            Condition::compile("fact.data.amount * 2 > 400 && fact.data.rate * 2.0 > 1.0").expect("compiles");
        assert_eq!(
            arithmetic.eval(&json!({"fact": {"data": {"amount": 250, "rate": 0.75}}})),
            Ok(true),
            "JSON numbers are ints and doubles"
        );
        let missing = when.eval(&json!({"fact": {"kind": "claim.received", "data": {}}})).expect_err("no text");
        assert!(missing.message.contains("text"), "{missing}");
        let number = Condition::compile("1 + 2").expect("compiles");
        assert!(number.eval(&json!({})).expect_err("not a boolean").message.contains("not a boolean"));
    }

    #[test]
    fn a_condition_that_runs_past_its_time_ends_there() {
        let input = json!({"input": {"text": ["a", "b"]}});
        let slow = Condition::compile("input.text.all(x, size(x) > 0)").expect("compiles");
        let error = slow.eval_within(&input, std::time::Duration::ZERO).expect_err("no time at all");
        assert!(error.over_budget, "{error}");
        assert!(error.message.contains("0 ms"), "{error}");
        assert_eq!(slow.eval(&input), Ok(true), "the same condition in its time has its value");
        let wrong = Condition::compile("input.text > 1").expect("compiles").eval(&input).expect_err("a type error");
        assert!(!wrong.over_budget, "an ordinary error is not a spent budget: {wrong}");
    }

    /// What a condition would cost over its input is bounded before anything runs: joining a
    /// large list to itself, or copying it at every step of a loop, is refused at once, however
    /// the cost is spread over the expression; what reads the same data a few times is not.
    #[test]
    fn a_condition_that_costs_too_much_for_its_input_is_refused_before_it_runs() {
        let xs: Vec<u32> = (0..100_000).collect();
        let fact = json!({"fact": {"data": {"xs": xs, "note": "x".repeat(100_000)}}});
        let joined = format!("size({}) > 0", vec!["fact.data.xs"; 130].join(" + "));
        let costly = [
            joined.as_str(),
            "fact.data.xs.map(x, fact.data.xs).size() > 0",
            "fact.data.xs.map(x, fact.data.xs.size()).size() > 0",
            "fact.data.xs.filter(x, [fact.data.xs, fact.data.xs] != []).size() > 0",
            "fact.data.xs.exists(x, size(fact.data.xs + [x]) == 0)",
            "fact.data.xs.all(x, fact.data.note.contains(string(x)))",
        ];
        for source in costly {
            let condition = Condition::compile(source).unwrap_or_else(|error| panic!("{source}: {error}"));
            // Refused from the estimate, before anything runs: no timing needed to show it.
            let error = condition.eval(&fact).expect_err(source);
            assert!(error.over_budget && error.message.contains("nothing was evaluated"), "{source}: {error}");
        }
        let nested = "fact.data.xs.all(x, fact.data.xs.exists(y, y == x))";
        assert!(Condition::compile(nested).expect_err("nested macros").message.contains("nest"));
        // Going over the data once or twice is within the bound; evaluated over less of it here,
        // so that the test's time is not an unoptimized build's.
        let fine = [
            "fact.data.xs.exists(x, x == 9999)",
            "9999 in fact.data.xs && size(fact.data.xs + fact.data.xs) == 20000",
            "fact.data.xs.filter(x, x % 2 == 0).size() == 5000",
            "fact.data.note.startsWith('xx') && size(fact.data.note) == 100000",
        ];
        let fewer: Vec<u32> = (0..10_000).collect();
        let less = json!({"fact": {"data": {"xs": fewer, "note": "x".repeat(100_000)}}});
        for source in fine {
            let condition = Condition::compile(source).unwrap_or_else(|error| panic!("{source}: {error}"));
            let over_all = cost::estimate(condition.program.expression(), &fact);
            assert!(over_all < MAX_COST, "{source}: {over_all} over 100,000 numbers");
            assert_eq!(condition.eval(&less), Ok(true), "{source}");
        }
        let small = json!({"fact": {"data": {"xs": [1, 2, 3], "note": "x"}}});
        let condition = Condition::compile(&joined).expect("compiles");
        assert_eq!(condition.eval(&small), Ok(true), "the same condition over a small input has its value");
    }

    #[test]
    fn what_could_exhaust_the_core_is_refused() {
        let deep = format!("{}true{}", "(".repeat(25), ")".repeat(25));
        assert!(Condition::compile(&deep).expect_err("too deep").message.contains("nests"));
        let fine = format!("{}true{}", "(".repeat(20), ")".repeat(20));
        assert_eq!(Condition::compile(&fine).expect("20 deep compiles").eval(&json!({})), Ok(true));
        assert_eq!(nesting("'((((' + \"))\" == x[0]"), 1, "brackets in strings do not count");
        let chain = vec!["1"; 500].join("+") + " > 0";
        assert_eq!(Condition::compile(&chain).expect("a long chain").eval(&json!({})), Ok(true));
        let nested = "fact.items.exists(i, fact.items.exists(j, i != j && i == j))";
        assert!(Condition::compile(nested).expect_err("nested macros").message.contains("nest"));
        let sequential = "fact.items.exists(i, i > 2) && fact.items.map(x, x * 2).all(y, y > 0)";
        let compiled = Condition::compile(sequential).expect("macros one after another");
        assert_eq!(compiled.eval(&json!({"fact": {"items": [1, 2, 3]}})), Ok(true));
    }

    #[test]
    fn a_bad_source_says_where() {
        let bad = Condition::compile("fact.amount >\n  && true").expect_err("malformed");
        assert!(bad.line >= 1 && bad.column >= 1, "{bad:?}");
        let long = "true && ".repeat(300) + "true";
        assert_eq!(Condition::compile(&long).expect_err("too long").line, 0);
        assert!(Condition::compile("  ").is_err());
    }
}
